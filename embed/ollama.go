package embed

// Ollama speaks Ollama's native API
// (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-embeddings):
//
//	POST {url}/api/embed  {"model": "nomic-embed-text", "input": ["text", ...]}
//	200                   {"model": "...", "embeddings": [[0.01, ...], ...]}
//	4xx, 5xx              {"error": "model \"x\" not found, try pulling it first"}
//
// Each input is truncated by the server to the model's context (its
// "truncate" defaults to true). Ollama answers L2-normalised vectors;
// they are normalised again here all the same, as the contract of every
// provider.

import (
	"encoding/json"
	"fmt"
)

// DefaultOllamaURL is where Ollama listens unless told otherwise.
const DefaultOllamaURL = "http://127.0.0.1:11434"

// NewOllama returns an Embedder that asks the Ollama server at cfg.URL
// (DefaultOllamaURL if empty) through POST /api/embed, as documented at
// https://github.com/ollama/ollama/blob/main/docs/api.md#generate-embeddings.
// cfg.APIKey is sent as a bearer token if set (a proxy in front of Ollama).
func NewOllama(cfg HTTPConfig) (Embedder, error) {
	return newHTTP(ollamaWire, cfg)
}

var ollamaWire = wire{provider: "ollama", url: DefaultOllamaURL, path: "/api/embed", vectors: ollamaVectors}

func ollamaVectors(body []byte, _ int) ([][]float32, error) {
	var answer struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("not an answer of /api/embed: %w", err)
	}
	return answer.Embeddings, nil
}
