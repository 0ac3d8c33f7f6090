package embedconf

import (
	"strings"
	"testing"

	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string // "" for valid
	}{
		{Config{}, ""},
		{Config{Provider: "off"}, ""},
		{Config{Provider: "builtin", Model: "potion-base-8M"}, ""},
		{Config{Provider: "ollama", URL: "http://127.0.0.1:11434", Model: "nomic-embed-text"}, ""},
		{Config{Provider: "openai", URL: "https://api.example.com/v1", APIKeyEnv: "OPENAI_API_KEY"}, ""},
		{Config{Provider: "cohere"}, "embed.provider"},
		{Config{Provider: "ollama", URL: "ftp://host"}, "embed.url"},
		{Config{Provider: "ollama", URL: "http://user:pass@host"}, "user or password"},
		{Config{Provider: "builtin", Model: "../../etc"}, "embed.model"},
		{Config{Provider: "openai", APIKeyEnv: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"}, "never the key"},
		{Config{Provider: "openai", APIKeyEnv: "ghp_" + strings.Repeat("a1B2", 9)}, "never the key"},
	} {
		err := c.cfg.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want an error about %s", c.cfg, err, c.want)
		case err != nil && c.cfg.APIKeyEnv != "" && strings.Contains(err.Error(), c.cfg.APIKeyEnv):
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

func TestNew(t *testing.T) {
	models := t.TempDir()
	if e, err := (Config{}).New(models); e != nil || err != nil {
		t.Errorf("off: %v, %v", e, err)
	}
	if _, err := (Config{Provider: "builtin", Model: "absent"}).New(models); err == nil || !strings.Contains(err.Error(), "memmesh embed enable") {
		t.Errorf("a builtin model not installed: %v", err)
	}
	dir := m2vtest.TopicModel(t, "topics")
	e, err := (Config{Provider: "builtin", Model: "topics"}).New(strings.TrimSuffix(dir, "/topics"))
	if err != nil || e.Info().Dims != len(m2vtest.Topics)+1 {
		t.Fatalf("builtin: %v, %v", e, err)
	}
	t.Setenv("MM_TEST_KEY", "")
	if _, err := (Config{Provider: "openai", APIKeyEnv: "MM_TEST_KEY"}).New(models); err == nil || !strings.Contains(err.Error(), "not set") {
		t.Errorf("a key variable not set: %v", err)
	}
	for _, p := range []string{"ollama", "openai"} {
		if e, err := (Config{Provider: p}).New(models); err != nil || e.Info().Provider != p {
			t.Errorf("%s: %v, %v", p, e, err)
		}
	}
}
