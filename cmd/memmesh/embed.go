package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

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
	cmd := &cobra.Command{
		Use:   "enable --from DIR",
		Short: "Install a builtin model (Model2Vec format) into the home",
		Long: `Installs a static embedding model in the Model2Vec format (config.json,
tokenizer.json and model.safetensors, such as minishlab/potion-base-8M)
from a folder into the home, checks that it loads, and says what to put in
config.toml. Nothing is downloaded: fetch the three files on a machine
that can reach them and copy the folder here.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if from == "" {
				return usagef("--from DIR is required: the folder holding config.json, tokenizer.json and model.safetensors of a Model2Vec model (such as minishlab/potion-base-8M); memmesh downloads nothing")
			}
			m, err := model2vec.Load(from)
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
			if err := installModel(from, dir); err != nil {
				return fmt.Errorf("embed enable: %w", err)
			}
			info := m.Info()
			done := func(w io.Writer) {
				fmt.Fprintf(w, "Installed %s (%d dims) in %s.\nTo search by meaning, put in %s:\n\n[embed]\nprovider = \"builtin\"\nmodel = %q\n\nthen restart the daemon ('memmesh stop', then 'memmesh serve').\n",
					name, info.Dims, dir, filepath.Join(a.home, configFile), name)
			}
			return a.emit(info, done, done)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "folder holding the model's config.json, tokenizer.json and model.safetensors")
	cmd.Flags().StringVar(&name, "name", "", "name of the installed model (default: its model_name, else its folder's name)")
	return cmd
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
