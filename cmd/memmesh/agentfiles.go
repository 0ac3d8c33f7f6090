package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/agentfiles"
	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
)

// agentFileFormat returns the agent file format --from or --to names, or
// false when it names none.
func agentFileFormat(name string, among []agentfiles.Format) (agentfiles.Format, bool) {
	f := agentfiles.Format(name)
	return f, slices.Contains(among, f)
}

// agentFileNamespace returns ns, or, when none was given, the namespace
// of the file's directory, as a command run there would take it.
func (a *app) agentFileNamespace(ns string, src agentfiles.Source) (string, error) {
	if ns != "" {
		return ns, nil
	}
	cfg, err := loadConfigAt(a.home, filepath.Dir(src.Path))
	if err != nil {
		return "", err
	}
	if cfg.Namespace == "" {
		return api.DefaultNamespace, nil
	}
	return cfg.Namespace, nil
}

// importAgentFile imports an agent instruction file into a namespace.
func (a *app) importAgentFile(ctx context.Context, format agentfiles.Format, path, ns string, archive, dryRun bool) error {
	src, err := agentfiles.Locate(ctx, path)
	if err != nil {
		return err
	}
	lim := agentfiles.DefaultLimits()
	f, err := src.Read(lim)
	if err != nil {
		return err
	}
	if !f.Exists {
		return fmt.Errorf("%s: no such file", path)
	}
	items, err := agentfiles.Parse(f.Data, lim)
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was imported", path, err)
	}
	if ns, err = a.agentFileNamespace(ns, src); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	res, err := agentfiles.Import(ctx, c, src, items, agentfiles.ImportOptions{Namespace: ns, Format: format, ArchiveRemoved: archive, DryRun: dryRun})
	if err != nil {
		return fmt.Errorf("the import of %s stopped: %w; run it again to finish (what was imported is found again)", path, err)
	}
	return a.emit(res, func(w io.Writer) { printAgentImport(w, res) },
		func(w io.Writer) { fmt.Fprintln(w, res.Created, res.Updated, res.Unchanged, res.Removed) })
}

func printAgentImport(w io.Writer, res agentfiles.ImportResult) {
	verb := "Imported"
	if res.DryRun {
		verb = "Would import (dry run, nothing changed)"
	}
	fmt.Fprintf(w, "%s %s (%s) into namespace %s: %d created, %d updated, %d unchanged", verb, res.File,
		importCount(res.Items, "item", "items"), res.Namespace, res.Created, res.Updated, res.Unchanged)
	if res.Moved > 0 {
		fmt.Fprintf(w, " (%d moved)", res.Moved)
	}
	if res.Duplicates > 0 {
		fmt.Fprintf(w, ", %d already in the namespace", res.Duplicates)
	}
	fmt.Fprintf(w, ", %d removed from the file.\n", res.Removed)
	for _, c := range res.Changes {
		where := ""
		if c.Line > 0 {
			where = fmt.Sprintf("line %d", c.Line)
		}
		fmt.Fprintf(w, "  %-9s %-12s %-9s %s\n", c.Action, c.ID, where, c.Title)
	}
	if res.Removed > res.Archived {
		fmt.Fprintln(w, "Memories whose item left the file are kept: --archive-removed archives them.")
	}
	if len(res.Redacted) > 0 {
		fmt.Fprintf(w, "Removed secrets before storing: %s.\n", strings.Join(res.Redacted, ", "))
	}
}

// exportAgentFile writes a namespace's conventions and decisions into an
// agent instruction file's managed block, or checks that it is up to date.
func (a *app) exportAgentFile(ctx context.Context, format agentfiles.Format, path, ns string, budget int, check, force bool) error {
	src, err := agentfiles.Locate(ctx, path)
	if err != nil {
		return err
	}
	if ns, err = a.agentFileNamespace(ns, src); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	res, err := agentfiles.Export(ctx, c, src, agentfiles.ExportOptions{Namespace: ns, Format: format, Budget: budget, Check: check, Force: force,
		BackupDir: filepath.Join(a.home, "backups"), Now: time.Now()})
	switch {
	case errors.Is(err, agentfiles.ErrEdited), errors.Is(err, agentfiles.ErrOutOfDate):
		fmt.Fprint(a.stderr, inert.Text(explainBlock(res)))
		return err
	case err != nil:
		return err
	}
	return a.emit(res, func(w io.Writer) { printAgentExport(w, res, check) }, func(w io.Writer) { fmt.Fprintln(w, res.Shown, res.LeftOut) })
}

// explainBlock says why a block is out of date or refused, and shows the
// diff from the file's block to the one an export writes.
func explainBlock(res agentfiles.ExportResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s.\n", res.File, res.Reason)
	if res.Diff != "" {
		b.WriteString("--- the block in the file\n+++ the block an export writes\n")
		b.WriteString(res.Diff)
	}
	return b.String()
}

func printAgentExport(w io.Writer, res agentfiles.ExportResult, check bool) {
	switch {
	case !res.Changed && check:
		fmt.Fprintf(w, "%s is up to date (%s of namespace %s).\n", res.File, importCount(res.Shown, "memory", "memories"), res.Namespace)
		return
	case !res.Changed:
		fmt.Fprintf(w, "%s is up to date: nothing written.\n", res.File)
		return
	case res.Created:
		fmt.Fprintf(w, "Created %s", res.File)
	default:
		fmt.Fprintf(w, "Wrote the managed block of %s", res.File)
	}
	fmt.Fprintf(w, ": %s of namespace %s, %d tokens", importCount(res.Shown, "memory", "memories"), res.Namespace, res.Tokens)
	if res.LeftOut > 0 {
		fmt.Fprintf(w, "; %d left out for size (--budget)", res.LeftOut)
	}
	if res.Skipped > 0 {
		fmt.Fprintf(w, "; %d the file says already", res.Skipped)
	}
	fmt.Fprintln(w, ".")
	if res.Backup != "" {
		fmt.Fprintf(w, "The file as it was is kept in %s.\n", res.Backup)
	}
}
