package embed

// OpenAI speaks the embeddings API of OpenAI and of the servers
// compatible with it (vLLM, LM Studio, llama.cpp's server, Ollama's /v1,
// and others) (https://platform.openai.com/docs/api-reference/embeddings/create):
//
//	POST {base}/embeddings  {"model": "...", "input": ["text", ...], "encoding_format": "float"}
//	                        Authorization: Bearer KEY (when a key is set)
//	200                     {"object": "list", "data": [{"object": "embedding", "index": 0,
//	                         "embedding": [0.01, ...]}, ...], "model": "...", "usage": {...}}
//	4xx, 5xx                {"error": {"message": "...", "type": "...", "code": "..."}}
//
// The answer's items are placed by their index, not by their position.
// "float" is asked for explicitly: some clients and servers default to
// base64.

import (
	"encoding/json"
	"fmt"
)

// DefaultOpenAIURL is OpenAI's own API.
const DefaultOpenAIURL = "https://api.openai.com/v1"

// NewOpenAI returns an Embedder that asks the OpenAI-compatible API whose
// base URL (ending in /v1) is cfg.URL (DefaultOpenAIURL if empty)
// through POST /embeddings, as documented at
// https://platform.openai.com/docs/api-reference/embeddings/create.
func NewOpenAI(cfg HTTPConfig) (Embedder, error) {
	return newHTTP(openaiWire, cfg)
}

var openaiWire = wire{provider: "openai", url: DefaultOpenAIURL, path: "/embeddings", encoding: "float", vectors: openaiVectors}

// openaiVectors reads an answer to n texts: each index in [0, n) once.
func openaiVectors(body []byte, n int) ([][]float32, error) {
	var answer struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("not an answer of /embeddings: %w", err)
	}
	if len(answer.Data) != n {
		return nil, fmt.Errorf("%d vectors for %d texts", len(answer.Data), n)
	}
	vecs := make([][]float32, n)
	for _, d := range answer.Data {
		if d.Index < 0 || d.Index >= n || vecs[d.Index] != nil {
			return nil, fmt.Errorf("index %d out of range or repeated", d.Index)
		}
		if d.Embedding == nil {
			return nil, fmt.Errorf("no embedding at index %d", d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}
