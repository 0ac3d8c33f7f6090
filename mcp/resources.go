package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/api"
)

// Resource URIs.
const (
	contextURI        = "memmesh://context"
	statsURI          = "memmesh://stats"
	staleURI          = "memmesh://stale"
	memoryURITemplate = "memmesh://memory/{id}"
	memoryURIPrefix   = "memmesh://memory/"
)

const jsonMIME = "application/json"

func (h *handler) resources() []server.ServerResource {
	return []server.ServerResource{
		{
			Resource: mcpgo.NewResource(contextURI, "context",
				mcpgo.WithResourceTitle("Project context"),
				mcpgo.WithResourceDescription(fmt.Sprintf("The brief of namespace %q: sync conflicts, the most important active memories and stale ones, as quoted data with provenance (JSON). Read it at the start of a session.", h.namespace)),
				mcpgo.WithMIMEType(jsonMIME)),
			Handler: h.readContext,
		},
		{
			Resource: mcpgo.NewResource(statsURI, "stats",
				mcpgo.WithResourceTitle("memmesh status"),
				mcpgo.WithResourceDescription("Version, device and memory counts by status, namespace, kind and trust tier (JSON)."),
				mcpgo.WithMIMEType(jsonMIME)),
			Handler: h.readStats,
		},
		{
			Resource: mcpgo.NewResource(staleURI, "stale",
				mcpgo.WithResourceTitle("Stale memories"),
				mcpgo.WithResourceDescription(fmt.Sprintf("Memories of namespace %q that may no longer hold (marked stale, or superseded by a newer memory), with the reasons: check them, then update them (status active when they still hold) or forget them (JSON).", h.namespace)),
				mcpgo.WithMIMEType(jsonMIME)),
			Handler: h.readStale,
		},
	}
}

func (h *handler) resourceTemplates() []server.ServerResourceTemplate {
	return []server.ServerResourceTemplate{{
		Template: mcpgo.NewResourceTemplate(memoryURITemplate, "memory",
			mcpgo.WithTemplateTitle("A memory"),
			mcpgo.WithTemplateDescription("One memory by id (full or short, e.g. m-k3j5x2ab), with its provenance, as quoted data (JSON)."),
			mcpgo.WithTemplateMIMEType(jsonMIME)),
		Handler: h.readMemory,
	}}
}

// jsonContents answers a read with v as JSON.
func jsonContents(uri string, v any) ([]mcpgo.ResourceContents, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", uri, err)
	}
	return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: uri, MIMEType: jsonMIME, Text: string(data)}}, nil
}

func (h *handler) readContext(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
	b, err := h.svc.Context(ctx, api.ContextRequest{Namespace: h.namespace, Format: api.FormatJSON})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", contextURI, err)
	}
	return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: req.Params.URI, MIMEType: jsonMIME, Text: string(b.JSON())}}, nil
}

func (h *handler) readStats(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
	st, err := h.svc.Stats(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", statsURI, err)
	}
	agent, session := h.callers.Caller(ctx)
	return jsonContents(req.Params.URI, statusData{Version: h.version, DefaultNamespace: h.namespace, Agent: agent, Session: session, Stats: st})
}

// staleData is the content of memmesh://stale and of review with check stale.
type staleData struct {
	Notice    string           `json:"notice"`
	Namespace string           `json:"namespace"`
	Memories  []staleEntryData `json:"memories"`
}

type staleEntryData struct {
	memoryData
	Reasons []string `json:"reasons" jsonschema:"why it may no longer hold: marked stale, or superseded by a newer memory"`
}

func (h *handler) staleOf(ctx context.Context, ns string) (staleData, error) {
	list, err := h.svc.Stale(ctx, api.StaleRequest{Namespace: ns})
	if err != nil {
		return staleData{}, err
	}
	out := staleData{Notice: dataNotice, Namespace: ns, Memories: []staleEntryData{}}
	for _, s := range list {
		out.Memories = append(out.Memories, staleEntryData{memoryData: newMemory(s.Memory), Reasons: s.Reasons})
	}
	return out, nil
}

func (h *handler) readStale(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
	out, err := h.staleOf(ctx, h.namespace)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", staleURI, err)
	}
	return jsonContents(req.Params.URI, out)
}

func (h *handler) readMemory(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
	var id string
	switch v := req.Params.Arguments["id"].(type) {
	case []string:
		if len(v) == 1 {
			id = v[0]
		}
	case string:
		id = v
	}
	if id == "" {
		return nil, fmt.Errorf("%s: give a memory id, e.g. %sm-k3j5x2ab", api.Echo(req.Params.URI), memoryURIPrefix)
	}
	m, err := h.svc.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", api.Echo(req.Params.URI), err)
	}
	return jsonContents(req.Params.URI, memoryResult{Notice: dataNotice, memoryData: newMemory(m)})
}
