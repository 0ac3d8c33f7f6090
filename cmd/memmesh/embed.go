package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed/embedconf"
	"github.com/memmesh/memmesh/embed/model2vec"
	"github.com/memmesh/memmesh/internal/safefile"
	"github.com/memmesh/memmesh/web"
)

func (a *app) embedCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "embed",
		Short: "Search by meaning: its status, its vectors, its builtin model",
		Long: `memmesh finds memories by their words, and, with an embedder set in
config.toml, by their meaning too ("message queue" finds the memory about
Kafka). Each machine makes the vectors of its memories in the background;
they are never sent to peers. Until they are ready, and whenever the
provider is down, search goes on by words alone.

  [embed]
  provider = "builtin"   # off (default) | builtin | ollama | openai
  model = "potion-base-8M"
  # url = "http://127.0.0.1:11434"     (ollama; openai: a base URL ending in /v1)
  # api_key_env = "OPENAI_API_KEY"     (openai: the variable's name, never the key)`,
	}
	cmd.AddCommand(a.embedStatusCommand(), a.embedReindexCommand(), a.embedEnableCommand())
	return cmd
}

func (a *app) embedStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the embedder and how many memories have their vector",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			st, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.EmbedStatus, error) { return c.EmbedStatus(ctx) })
			if err != nil {
				return err
			}
			return a.emit(st, func(w io.Writer) { printEmbedStatus(w, st) }, func(w io.Writer) { printEmbedStatus(w, st) })
		},
	}
}

func (a *app) embedReindexCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "reindex",
		Short: "Make every vector again, in the background",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			st, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.EmbedStatus, error) { return c.EmbedReindex(ctx) })
			if err != nil {
				return err
			}
			return a.emit(st, func(w io.Writer) {
				fmt.Fprintln(w, "The vectors are being made again; 'memmesh embed status' shows how far.")
			}, func(w io.Writer) { printEmbedStatus(w, st) })
		},
	}
}

func printEmbedStatus(w io.Writer, st api.EmbedStatus) {
	if st.Provider == "off" {
		fmt.Fprintln(w, "Search by meaning is off: search is by words. Set [embed] provider in config.toml ('memmesh embed --help').")
		return
	}
	if st.Scanning {
		fmt.Fprintf(w, "%s %s (%d dims): %d memories embedded; reading the others to find those without a vector\n", st.Provider, api.Echo(st.Model), st.Dims, st.Embedded)
	} else {
		fmt.Fprintf(w, "%s %s (%d dims): %d of %d memories embedded\n", st.Provider, api.Echo(st.Model), st.Dims, st.Embedded, st.Total)
	}
	if st.Error != "" {
		fmt.Fprintf(w, "Unavailable, searching by words: %s\n", api.Echo(st.Error))
	}
}

func (a *app) embedEnableCommand() *cobra.Command {
	var from, name string
	var sums []string
	cmd := &cobra.Command{
		Use:   "enable --from DIR|URL",
		Short: "Install a builtin model (Model2Vec format) into the home",
		Long: `Installs a static embedding model in the Model2Vec format (config.json,
tokenizer.json and model.safetensors, such as minishlab/potion-base-8M)
into the home, checks that it loads, and says what to put in config.toml.

--from names a folder holding the three files, or the URL of the folder
that serves them (Hugging Face: https://huggingface.co/OWNER/MODEL/resolve/main).
A download needs the sha256 of model.safetensors (the model's page lists
it), is checked against it, shows its progress on a terminal, and resumes
where it stopped when run again. Nothing is downloaded at any other time.`,
		Example: `  memmesh embed enable --from ./potion-base-8M
  memmesh embed enable --from https://huggingface.co/minishlab/potion-base-8M/resolve/main --sha256 model.safetensors=HEX`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if from == "" {
				return usagef("--from is required: a folder holding config.json, tokenizer.json and model.safetensors of a Model2Vec model, or the URL that serves them")
			}
			checks, err := parseSums(sums)
			if err != nil {
				return err
			}
			src := from
			if remote := strings.HasPrefix(from, "http://") || strings.HasPrefix(from, "https://"); remote {
				if name == "" {
					name = path.Base(strings.TrimSuffix(strings.TrimSuffix(from, "/"), "/resolve/main"))
				}
				if checks["model.safetensors"] == "" {
					return usagef("--sha256 model.safetensors=HEX is required to download a model: copy it from the model's page")
				}
				if src, err = a.downloadModel(cmd.Context(), from, name, checks); err != nil {
					return err
				}
			}
			m, err := model2vec.Load(src)
			if err != nil {
				return fmt.Errorf("embed enable: %s is not a model memmesh can use: %w", api.Echo(from), err)
			}
			if name == "" {
				name = path.Base(m.Info().Model) // minishlab/potion-base-8M: potion-base-8M
			}
			if !embedconf.ModelName.MatchString(name) {
				return usagef("--name %q: use letters, digits, dots, dashes and underscores", api.Echo(name))
			}
			dir := filepath.Join(a.home, embedconf.ModelsDir, name)
			if err := installModel(src, dir); err != nil {
				return fmt.Errorf("embed enable: %w", err)
			}
			if src != from {
				os.RemoveAll(src)
			}
			info := m.Info()
			done := func(w io.Writer) {
				fmt.Fprintf(w, "Installed %s (%d dims) in %s.\nTo search by meaning, put in %s:\n\n[embed]\nprovider = \"builtin\"\nmodel = %q\n\nthen restart the daemon ('memmesh stop', then 'memmesh serve').\n",
					name, info.Dims, dir, filepath.Join(a.home, configFile), name)
			}
			return a.emit(info, done, done)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "folder holding the model's config.json, tokenizer.json and model.safetensors, or the URL that serves them")
	cmd.Flags().StringVar(&name, "name", "", "name of the installed model (default: its model_name, else its folder's name)")
	cmd.Flags().StringArrayVar(&sums, "sha256", nil, "FILE=HEX: the sha256 a file must have (required for model.safetensors when downloading)")
	return cmd
}

// parseSums reads --sha256 FILE=HEX values.
func parseSums(values []string) (map[string]string, error) {
	sums := map[string]string{}
	for _, v := range values {
		file, sum, ok := strings.Cut(v, "=")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != 2*sha256.Size || !slices.Contains(model2vec.Files, file) {
			return nil, usagef("--sha256 %q: use FILE=HEX, FILE one of %s, HEX 64 hexadecimal digits", api.Echo(v), strings.Join(model2vec.Files, ", "))
		}
		sums[file] = sum
	}
	return sums, nil
}

// downloadModel fetches the model served at from into a folder of the
// home kept between runs (a run again resumes it), and returns it.
func (a *app) downloadModel(ctx context.Context, from, name string, sums map[string]string) (string, error) {
	if !embedconf.ModelName.MatchString(name) {
		return "", usagef("--name %q: use letters, digits, dots, dashes and underscores", api.Echo(name))
	}
	dir := filepath.Join(a.home, embedconf.ModelsDir, ".download-"+name)
	var show func(file string, done, total int64)
	if f, ok := a.stderrTerminal(); ok {
		last := time.Time{}
		show = func(file string, done, total int64) {
			if time.Since(last) < 200*time.Millisecond && done != total {
				return
			}
			last = time.Now()
			if total > 0 {
				fmt.Fprintf(f, "\rDownloading %s: %.1f of %.1f MB (%d%%)  ", file, float64(done)/1e6, float64(total)/1e6, 100*done/total)
			} else {
				fmt.Fprintf(f, "\rDownloading %s: %.1f MB  ", file, float64(done)/1e6)
			}
		}
		defer fmt.Fprintln(f)
	}
	if err := model2vec.Fetch(ctx, http.DefaultClient, from, dir, sums, show); err != nil {
		return "", fmt.Errorf("embed enable: %w", err)
	}
	return dir, nil
}

// modelFiles are the files of a Model2Vec model's folder.
var modelFiles = []string{"config.json", "tokenizer.json", "model.safetensors"}

// installModel copies the model's files from src into dir, each written
// and synced under a temporary name before it takes its own.
func installModel(src, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range modelFiles {
		if err := copyFile(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return safefile.CopyAtomic(to, in, 0o600)
}
