// Package embedconf reads the choice of an embedder ([embed] in
// config.toml) and makes the embedder it names: the builtin Model2Vec
// runtime, Ollama, or an OpenAI-compatible server.
package embedconf

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/embed/model2vec"
	"github.com/memmesh/memmesh/internal/secrets"
)

// Config chooses the embedder of search by meaning ([embed] in
// config.toml).
type Config struct {
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
)

// ModelsDir is the folder of a home holding its builtin models.
const ModelsDir = "models"

// envName is what a variable's name looks like; a key does not.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// ModelName is what an installed model's name may be: a folder's name.
var ModelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Check validates the configuration without reaching any provider.
func (e Config) Check() error {
	switch e.Provider {
	case "", "off", "builtin", "ollama", "openai":
	default:
		return fmt.Errorf("embed.provider %q: use off, builtin, ollama or openai", api.Echo(e.Provider))
	}
	if e.URL != "" {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("embed.url %q: use an http or https URL, such as %s", api.Echo(e.URL), defaultOllamaURL)
		}
		if u.User != nil {
			return errors.New("embed.url holds a user or password: put the key in the variable named by embed.api_key_env")
		}
	}
	if e.Provider == "builtin" && e.Model != "" && !ModelName.MatchString(e.Model) {
		return fmt.Errorf("embed.model %q: the name of a model installed with 'memmesh embed enable'", api.Echo(e.Model))
	}
	if _, found := secrets.Scrub(e.APIKeyEnv); e.APIKeyEnv != "" && (!envName.MatchString(e.APIKeyEnv) || len(found) > 0) {
		return errors.New("embed.api_key_env takes the name of the environment variable that holds the key (such as OPENAI_API_KEY), never the key itself")
	}
	return nil
}

// New returns the embedder the configuration chooses, nil when off; a
// builtin model is read from its folder in models.
func (e Config) New(models string) (embed.Embedder, error) {
	switch e.Provider {
	case "", "off":
		return nil, nil
	case "builtin":
		name := cmp.Or(e.Model, defaultBuiltinModel)
		m, err := model2vec.Load(filepath.Join(models, name))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("the builtin model %s is not installed: run 'memmesh embed enable --from DIR|URL'", name)
		}
		return m, err
	case "ollama":
		return embed.NewOllama(embed.HTTPConfig{URL: cmp.Or(e.URL, defaultOllamaURL), Model: cmp.Or(e.Model, defaultOllamaModel)})
	}
	var key string
	if e.APIKeyEnv != "" {
		if key = os.Getenv(e.APIKeyEnv); key == "" {
			return nil, fmt.Errorf("embed.api_key_env names %s, which is not set", e.APIKeyEnv)
		}
	}
	return embed.NewOpenAI(embed.HTTPConfig{URL: cmp.Or(e.URL, defaultOpenAIURL), Model: cmp.Or(e.Model, defaultOpenAIModel), APIKey: key})
}
