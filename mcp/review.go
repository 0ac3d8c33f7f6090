package mcp

import (
	"context"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/api"
)

// The checks of the review tool: the upkeep of a namespace's memories, one
// tool for agents to pick, since they share arguments and are all reads.
const (
	checkStale   = "stale"
	checkAnalyze = "analyze"
	checkReflect = "reflect"
	checkCompact = "compact"
)

func (h *handler) reviewTool() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := mcpgo.NewTool("review",
		hints("Review memories", true, false, true),
		mcpgo.WithDescription(`Review a namespace: memories that may no longer hold, with why, to update or forget (stale); the link graph's hubs, bridges and gaps (analyze); unlinked memories with candidates to link (reflect); clusters of stale memories to summarise with compact_apply (compact).`),
		mcpgo.WithString("check", mcpgo.Required(), mcpgo.Enum(checkStale, checkAnalyze, checkReflect, checkCompact), mcpgo.Description("What to review.")),
		mcpgo.WithString("namespace", mcpgo.Description(h.namespaceDescription())),
		mcpgo.WithInteger("limit", mcpgo.Min(1), mcpgo.Max(100), mcpgo.Description("analyze, reflect: entries per list. Default: 10.")),
	)
	return tool, func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		a := readArgs(tool, req)
		check, ns, limit := a.str("check"), h.namespaceOr(a.str("namespace")), a.integer("limit")
		if limit != 0 && (check == checkStale || check == checkCompact) {
			a.problems = append(a.problems, "limit is for analyze and reflect")
		}
		if bad := a.problem(); bad != nil {
			return bad, nil
		}
		var res *mcpgo.CallToolResult
		var err error
		switch check {
		case checkStale:
			res, err = h.reviewStale(ctx, ns)
		case checkAnalyze:
			res, err = h.reviewAnalyze(ctx, api.AnalyzeRequest{Namespace: ns, Limit: limit})
		case checkReflect:
			res, err = h.reviewReflect(ctx, api.ReflectRequest{Namespace: ns, Limit: limit})
		default:
			res, err = h.reviewCompact(ctx, api.CompactRequest{Namespace: ns})
		}
		if err != nil {
			return h.failure(tool.Name, err, "Use status to see which namespaces exist."), nil
		}
		return res, nil
	}
}

func (h *handler) reviewStale(ctx context.Context, ns string) (*mcpgo.CallToolResult, error) {
	out, err := h.staleOf(ctx, ns)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(out.Notice + "\n")
	fmt.Fprintf(&b, "%d memories of %q may no longer hold.\n", len(out.Memories), out.Namespace)
	for i := range out.Memories {
		m := &out.Memories[i]
		m.write(&b, attr{"reasons", strings.Join(m.Reasons, "; ")})
	}
	return mcpgo.NewToolResultStructured(out, b.String()), nil
}

func (h *handler) reviewAnalyze(ctx context.Context, r api.AnalyzeRequest) (*mcpgo.CallToolResult, error) {
	res, err := h.svc.Analyze(ctx, r)
	if err != nil {
		return nil, err
	}
	out := analysisData{Notice: dataNotice, Analysis: res}
	return mcpgo.NewToolResultStructured(out, out.text()), nil
}

func (h *handler) reviewReflect(ctx context.Context, r api.ReflectRequest) (*mcpgo.CallToolResult, error) {
	res, err := h.svc.Reflect(ctx, r)
	if err != nil {
		return nil, err
	}
	out := reflectData{Notice: dataNotice, Namespace: r.Namespace, Memories: res}
	var b strings.Builder
	b.WriteString(out.Notice + "\n")
	fmt.Fprintf(&b, "%d unlinked memories in %q.\n", len(res), r.Namespace)
	for _, m := range res {
		fmt.Fprintf(&b, "\n- %s %q may relate to:\n", m.Memory.ID, quote(m.Memory.Title))
		for _, c := range m.Candidates {
			fmt.Fprintf(&b, "  - %s %q (score %g)\n", c.ID, quote(c.Title), c.Score)
		}
	}
	return mcpgo.NewToolResultStructured(out, b.String()), nil
}

func (h *handler) reviewCompact(ctx context.Context, r api.CompactRequest) (*mcpgo.CallToolResult, error) {
	plan, err := h.svc.CompactCandidates(ctx, r)
	if err != nil {
		return nil, err
	}
	out := compactData{Notice: dataNotice, CompactPlan: plan}
	var b strings.Builder
	b.WriteString(out.Notice + "\n")
	fmt.Fprintf(&b, "%d clusters of stale memories in %q.\n", len(plan.Clusters), plan.Namespace)
	if len(plan.Clusters) > 0 {
		b.WriteString("\n" + plan.Prompt + "\n")
	}
	for i, c := range plan.Clusters {
		fmt.Fprintf(&b, "\nCluster %d:\n", i+1)
		for _, m := range c.Members {
			fmt.Fprintf(&b, "- %s %q (stale: %s)\n  %s\n", m.Memory.ID, quote(m.Memory.Title), strings.Join(m.Reasons, "; "), quote(m.Memory.Content))
		}
	}
	return mcpgo.NewToolResultStructured(out, b.String()), nil
}

func (h *handler) compactApplyTool() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := mcpgo.NewTool("compact_apply",
		hints("Replace memories with a summary", false, false, false),
		mcpgo.WithDescription(`Store a summary of two or more memories of a namespace (a cluster from review compact) as a memory of kind summary; their links move to it and they are marked compacted (kept, out of recall).`),
		mcpgo.WithArray("members", mcpgo.Required(), mcpgo.WithStringItems(), mcpgo.Description("Ids it replaces (2 to 100).")),
		mcpgo.WithString("summary", mcpgo.Required(), mcpgo.Description("Every fact, decision and caveat that still holds.")),
		mcpgo.WithString("title", mcpgo.Description("Default: the first line.")),
	)
	return tool, func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		a := readArgs(tool, req)
		r := api.CompactApplyRequest{Members: a.strs("members"), Summary: a.str("summary"), Title: a.str("title")}
		if bad := a.problem(); bad != nil {
			return bad, nil
		}
		r.Agent, r.Session = h.callers.Caller(ctx)
		res, err := h.svc.CompactApply(ctx, r)
		if err != nil {
			return h.failure(tool.Name, err, "Use review compact for clusters of live memories of one namespace."), nil
		}
		text := fmt.Sprintf("Stored summary %s; compacted %s into it; %d links moved to it.",
			res.Summary.ShortID, strings.Join(res.Members, ", "), len(res.Repointed))
		return mcpgo.NewToolResultStructured(res, text), nil
	}
}
