package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/embed/model2vec"
	"github.com/memmesh/memmesh/web"
)

// EmbedConfig chooses the embedder of search by meaning ([embed] in
// config.toml).
type EmbedConfig struct {
	// Provider is off (the default), builtin, ollama or openai.
	Provider string `toml:"provider"`
	// URL is the server's: Ollama's root, or an OpenAI-compatible base
	// URL ending in /v1.
	URL string `toml:"url"`
	// Model is the provider's model; for builtin, the name of a model
	// installed with 'memmesh embed enable'.
	Model string `toml:"model"`
	// APIKeyEnv names the environment variable that holds the API key
	// (openai only); never the key itself.
	APIKeyEnv string `toml:"api_key_env"`
}

// Defaults of [embed].
const (
	defaultBuiltinModel = "potion-base-8M"
	defaultOllamaURL    = "http://127.0.0.1:11434"
	defaultOllamaModel  = "nomic-embed-text"
	defaultOpenAIURL    = "https://api.openai.com/v1"
	defaultOpenAIModel  = "text-embedding-3-small"
	// modelsDir holds the builtin models in the home.
	modelsDir = "models"
)

// envName is what a variable's name looks like; a key does not.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// modelName is what an installed model's name may be: a folder's name.
var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// check validates [embed] without reaching any provider.
func (e EmbedConfig) check() error {
	switch e.Provider {
	case "", "off", "builtin", "ollama", "openai":
	default:
		return fmt.Errorf("config: embed.provider %q: use off, builtin, ollama or openai", api.Echo(e.Provider))
	}
	if e.URL != "" {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: embed.url %q: use an http or https URL, such as %s", api.Echo(e.URL), defaultOllamaURL)
		}
		if u.User != nil {
			return errors.New("config: embed.url holds a user or password: put the key in the variable named by embed.api_key_env")
		}
	}
	if e.Provider == "builtin" && e.Model != "" && !modelName.MatchString(e.Model) {
		return fmt.Errorf("config: embed.model %q: the name of a model installed with 'memmesh embed enable'", api.Echo(e.Model))
	}
	if e.APIKeyEnv != "" && !envName.MatchString(e.APIKeyEnv) {
		return errors.New("config: embed.api_key_env takes the name of the environment variable that holds the key (such as OPENAI_API_KEY), never the key itself")
	}
	return nil
}

// embedder returns the embedder [embed] chooses, nil when off.
func (e EmbedConfig) embedder(home string) (embed.Embedder, error) {
	switch e.Provider {
	case "", "off":
		return nil, nil
	case "builtin":
		name := cmp.Or(e.Model, defaultBuiltinModel)
		m, err := model2vec.Load(filepath.Join(home, modelsDir, name))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("embed: the builtin model %s is not installed: run 'memmesh embed enable --from DIR'", name)
		}
		return m, err
	case "ollama":
		return embed.NewOllama(embed.HTTPConfig{URL: cmp.Or(e.URL, defaultOllamaURL), Model: cmp.Or(e.Model, defaultOllamaModel)})
	}
	var key string
	if e.APIKeyEnv != "" {
		if key = os.Getenv(e.APIKeyEnv); key == "" {
			return nil, fmt.Errorf("embed: embed.api_key_env names %s, which is not set", e.APIKeyEnv)
		}
	}
	return embed.NewOpenAI(embed.HTTPConfig{URL: cmp.Or(e.URL, defaultOpenAIURL), Model: cmp.Or(e.Model, defaultOpenAIModel), APIKey: key})
}

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
	fmt.Fprintf(w, "%s %s (%d dims): %d of %d memories embedded\n", st.Provider, api.Echo(st.Model), st.Dims, st.Embedded, st.Total)
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
			if !modelName.MatchString(name) {
				return usagef("--name %q: use letters, digits, dots, dashes and underscores", api.Echo(name))
			}
			dir := filepath.Join(a.home, modelsDir, name)
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
	tmp, err := os.CreateTemp(filepath.Dir(to), ".install-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), to)
}
