package openai

import (
	"context"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Embedder calls an OpenAI-compatible /embeddings endpoint.
type Embedder struct {
	model  string
	client oai.Client
}

// NewEmbedder builds an embeddings client from the same settings as a model (API,
// temperature and streaming do not apply).
func NewEmbedder(cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("model is required")
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 2
	}
	opts := clientOptions(cfg)
	if cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	return &Embedder{model: cfg.Model, client: oai.NewClient(opts...)}, nil
}

// Embed returns one vector per text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := e.client.Embeddings.New(ctx, oai.EmbeddingNewParams{Model: oai.EmbeddingModel(e.model),
		Input: oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
	if err != nil {
		return nil, err
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("asked for %d embeddings, got %d", len(texts), len(resp.Data))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) {
			return nil, fmt.Errorf("embedding index %d out of range", d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, f := range d.Embedding {
			v[i] = float32(f)
		}
		out[d.Index] = v
	}
	return out, nil
}
