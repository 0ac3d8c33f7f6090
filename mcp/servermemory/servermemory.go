// Package servermemory is the server-memory profile of memmesh's MCP
// server: it serves the tools of the official MCP memory server
// (@modelcontextprotocol/server-memory): create_entities,
// create_relations, add_observations, delete_entities, delete_observations,
// delete_relations, read_graph, search_nodes and open_nodes, with the same
// names, descriptions, input and output schemas, text and structured results,
// and the knowledge-graph resource memory://knowledge-graph. A client can swap
// that server for `memmesh mcp --profile server-memory` and keep its graph
// (Import reads the official memory.jsonl).
//
// # Mapping
//
// The graph lives in one namespace (DefaultNamespace by default); the
// profile reads and writes nothing else.
//
// An entity is one memory of kind "entity", trust tier agent, evergreen (a
// knowledge graph does not expire). Its title is the name, on one line and
// at most api.MaxTitleRunes long, for display. Its content holds the exact
// name, type and observations, in order:
//
//	entity: "John Smith"
//	type: person
//	- Speaks fluent Spanish
//	- "Graduated in 2019\nwith honours"
//
// The name is always a quoted string; the type and each observation are
// written as they are when that reads back exactly (non-empty, printable,
// one line, no surrounding spaces, not starting with a double quote), and as
// a quoted string otherwise. Quoted strings are Go string literals
// (strconv.Quote) in which a run of two or more spaces is written as \x20
// escapes, so the name line alone decides memmesh's duplicate detection
// (which compares content with runs of white space collapsed): two
// entities never share a content. A line that is none of these, as in text
// written into the memory by other means, is read as one observation.
//
// A relation is an edge, origin "server-memory", from the memory of one
// entity to the memory of the other; a name that is no entity, and the
// target of a relation from an entity to itself, is a reference memory
// (kind "entity-ref", content `reference: "NAME"`). Its rel is the relationType when that
// is a memmesh relation name (lower-case kebab or snake case); otherwise it
// is a slug of the relationType followed by "-" and 8 hex digits of its
// SHA-256 ("Works At" -> "works_at-815ba396"), so that distinct relation
// types never share an edge, and the exact relationType is kept in the
// edge's notes. Any live edge between two memories of the graph is a
// relation, including ones made with memmesh's own tools.
//
// Adding or deleting observations appends a content revision; deleting an
// entity deletes its memory and unlinks its relations.
//
// # Behaviour
//
// Every tool behaves as the official server's does: existing entities and
// relations are skipped on creation, add_observations adds only
// observations the entity does not have and fails with "Entity with name X
// not found", the deletions ignore what does not exist, search_nodes matches
// names, types and observations case-insensitively, and search_nodes and
// open_nodes return the relations that touch a returned entity. Relations
// to and from names that are no entity, and from an entity to itself, are
// stored as the official server stores them (store.go: through
// a reference memory); a relation from a name that is no entity to itself
// fails and changes nothing. A name given twice in one create_entities call, or a
// relation given twice in one create_relations call, is created once.
// Strings are scrubbed of secrets (secrets.Scrub) before they are stored or
// compared. Entities are listed in the order they were created, relations
// in the order they were last created.
//
// Memories of one name created on several devices before they synced are
// shown as one entity: the type and observations of the oldest, then the
// observations the others add. Observations are added to the oldest and
// deleted from all of them.
package servermemory

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/secrets"
)

// Service is what the server-memory profile needs from a node.
// It is implemented by *node.Node and by *web.Client.
type Service interface {
	Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error)
	Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error)
	Delete(ctx context.Context, ref string) (api.Memory, error)
	List(ctx context.Context, req api.ListRequest) ([]api.Memory, error)
	Link(ctx context.Context, req api.LinkRequest) (api.Edge, error)
	Unlink(ctx context.Context, from, rel, to string) (api.Edge, error)
	Edges(ctx context.Context, req api.EdgesRequest) ([]api.Edge, error)
	Changes(ctx context.Context, req api.ChangesRequest) (api.ChangesResult, error)
}

// Callers names the client of a request (its agent and MCP session) for
// the provenance of what it writes, as the memmesh profile records it. It
// is implemented by *mcp.Callers.
type Callers interface {
	Caller(ctx context.Context) (agent, session string)
}

// DefaultNamespace holds the knowledge graph when no namespace is given.
const DefaultNamespace = "server-memory"

// Options configure the server-memory profile.
type Options struct {
	// Namespace holds the graph; "" means DefaultNamespace.
	Namespace string
	// Logger receives the profile's logs; nil discards them.
	Logger *slog.Logger
}

// Entity is an entity of the knowledge graph.
type Entity struct {
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
}

// Relation is a directed, typed relation between two entities.
type Relation struct {
	From         string `json:"from"`
	To           string `json:"to"`
	RelationType string `json:"relationType"`
}

// Graph is a knowledge graph, or the part of one a query returns.
type Graph struct {
	Entities  []Entity   `json:"entities"`
	Relations []Relation `json:"relations"`
}

// serverMemoryAddition asks add_observations to add Contents to an entity.
type serverMemoryAddition struct {
	EntityName string
	Contents   []string
}

// serverMemoryAdded reports the observations add_observations added.
type serverMemoryAdded struct {
	EntityName        string   `json:"entityName"`
	AddedObservations []string `json:"addedObservations"`
}

// serverMemoryDeletion asks delete_observations to remove Observations
// from an entity.
type serverMemoryDeletion struct {
	EntityName   string
	Observations []string
}

const (
	serverMemoryKind     = "entity"
	serverMemoryOrigin   = "server-memory"
	serverMemoryPageSize = 1000 // the most memories List returns at once
	serverMemoryGraphURI = "memory://knowledge-graph"
)

// New returns an MCP server with the official memory server's
// tools and resource, backed by svc; callers names the clients of its
// requests.
func New(svc Service, callers Callers, opts Options) *server.MCPServer {
	ns := opts.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &serverMemoryProfile{
		store:   newServerMemoryStore(svc, ns),
		log:     log.With("component", "mcp", "profile", "server-memory", "namespace", ns),
		callers: callers,
	}
	s := server.NewMCPServer("memmesh", api.Version(),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithOutputSchemaValidation(),
		server.WithRecovery(),
		server.WithResourceRecovery(),
	)
	for _, tool := range []func() (mcpgo.Tool, server.ToolHandlerFunc){
		p.createEntities, p.createRelations, p.addObservations,
		p.deleteEntities, p.deleteObservations, p.deleteRelations,
		p.readGraph, p.searchNodes, p.openNodes,
	} {
		s.AddTool(tool())
	}
	s.AddResource(p.graphResource())
	return s
}

// serverMemoryProfile holds the tool handlers.
type serverMemoryProfile struct {
	store   *serverMemoryStore
	log     *slog.Logger
	callers Callers
}

// serverMemoryUserError is a failure caused by the request, reported to the
// client as it is.
type serverMemoryUserError string

func (e serverMemoryUserError) Error() string { return string(e) }

// handle runs a tool: it checks the arguments with run's decoders and turns
// a failure into an error result.
func (p *serverMemoryProfile) handle(run func(context.Context, *serverMemoryArgs) (*mcpgo.CallToolResult, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		name := req.Params.Name
		args := &serverMemoryArgs{tool: name, root: map[string]any{}}
		if req.Params.Arguments != nil {
			args.root, _ = args.object(req.Params.Arguments, "")
		}
		res, err := run(ctx, args)
		if err == nil {
			return res, nil
		}
		var user serverMemoryUserError
		if errors.As(err, &user) || errors.Is(err, api.ErrInvalid) {
			p.log.Debug("tool call refused", "tool", name, "err", err)
		} else {
			p.log.Error("tool call failed", "tool", name, "err", err)
		}
		return mcpgo.NewToolResultError(err.Error()), nil
	}
}

// serverMemoryProvenance says who writes, for the memories' provenance.
type serverMemoryProvenance struct {
	agent, session string
}

// client returns the provenance of the MCP client behind ctx.
func (p *serverMemoryProfile) client(ctx context.Context) serverMemoryProvenance {
	agent, session := p.callers.Caller(ctx)
	return serverMemoryProvenance{agent: agent, session: session}
}

// The official server's schemas, as its tools/list shows them.

func serverMemoryString(description string) map[string]any {
	s := map[string]any{"type": "string"}
	if description != "" {
		s["description"] = description
	}
	return s
}

func serverMemoryArray(items any, description string) map[string]any {
	s := map[string]any{"type": "array", "items": items}
	if description != "" {
		s["description"] = description
	}
	return s
}

// serverMemoryObject is an object schema; closed ones forbid other
// properties (the official output schemas are closed, its inputs are not).
func serverMemoryObject(properties map[string]any, required []string, closed bool) map[string]any {
	s := map[string]any{"type": "object", "properties": properties}
	if len(required) > 0 {
		s["required"] = required
	}
	if closed {
		s["additionalProperties"] = false
	}
	return s
}

func serverMemorySchema(properties map[string]any, required []string, closed bool) json.RawMessage {
	s := serverMemoryObject(properties, required, closed)
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	data, err := json.Marshal(s)
	if err != nil {
		panic(err) // maps of strings, slices and bools always encode
	}
	return data
}

func serverMemoryEntitySchema(closed bool) map[string]any {
	return serverMemoryObject(map[string]any{
		"name":         serverMemoryString("The name of the entity"),
		"entityType":   serverMemoryString("The type of the entity"),
		"observations": serverMemoryArray(serverMemoryString(""), "An array of observation contents associated with the entity"),
	}, []string{"name", "entityType", "observations"}, closed)
}

func serverMemoryRelationSchema(closed bool) map[string]any {
	return serverMemoryObject(map[string]any{
		"from":         serverMemoryString("The name of the entity where the relation starts"),
		"to":           serverMemoryString("The name of the entity where the relation ends"),
		"relationType": serverMemoryString("The type of the relation"),
	}, []string{"from", "to", "relationType"}, closed)
}

var serverMemoryGraphSchema = serverMemorySchema(map[string]any{
	"entities":  serverMemoryArray(serverMemoryEntitySchema(true), ""),
	"relations": serverMemoryArray(serverMemoryRelationSchema(true), ""),
}, []string{"entities", "relations"}, true)

var serverMemorySuccessSchema = serverMemorySchema(map[string]any{
	"success": map[string]any{"type": "boolean"},
	"message": map[string]any{"type": "string"},
}, []string{"success", "message"}, true)

// serverMemoryTool builds a tool definition. Tools that write are neither
// read-only nor idempotent; deletions are destructive and idempotent.
func serverMemoryTool(name, title, description string, input, output json.RawMessage, readOnly, destructive bool) mcpgo.Tool {
	return mcpgo.Tool{
		Name:            name,
		Title:           title,
		Description:     description,
		RawInputSchema:  input,
		RawOutputSchema: output,
		Annotations: mcpgo.ToolAnnotation{
			ReadOnlyHint:    mcpgo.ToBoolPtr(readOnly),
			DestructiveHint: mcpgo.ToBoolPtr(destructive),
			IdempotentHint:  mcpgo.ToBoolPtr(readOnly || destructive),
			OpenWorldHint:   mcpgo.ToBoolPtr(false),
		},
		Execution: &mcpgo.ToolExecution{TaskSupport: mcpgo.TaskSupportForbidden},
	}
}

// serverMemoryResult is a successful result: v as indented JSON text, as
// the official server writes it, and structured as structured content.
func serverMemoryResult(v, structured any) (*mcpgo.CallToolResult, error) {
	text, err := serverMemoryJSON(v)
	if err != nil {
		return nil, err
	}
	return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(text)}, StructuredContent: structured}, nil
}

// serverMemorySuccess is the result of a deletion.
func serverMemorySuccess(message string) *mcpgo.CallToolResult {
	return &mcpgo.CallToolResult{
		Content: []mcpgo.Content{mcpgo.NewTextContent(message)},
		StructuredContent: struct {
			Success bool   `json:"success"`
			Message string `json:"message"`
		}{true, message},
	}
}

// serverMemoryJSON encodes v as JSON.stringify(v, null, 2) does.
func serverMemoryJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	return serverMemoryUnescapeSeparators(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// serverMemoryUnescapeSeparators writes U+2028 and U+2029 as they are:
// encoding/json escapes them, JSON.stringify does not.
func serverMemoryUnescapeSeparators(data []byte) string {
	if !bytes.Contains(data, []byte(`\u202`)) {
		return string(data)
	}
	var b strings.Builder
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' || i+1 == len(data) {
			b.WriteByte(data[i])
			continue
		}
		// data[i:i+2] starts an escape sequence.
		if esc := string(data[i+1 : min(i+6, len(data))]); esc == "u2028" || esc == "u2029" {
			r, _ := strconv.ParseUint(esc[1:], 16, 32)
			b.WriteRune(rune(r))
			i += 5
		} else {
			b.Write(data[i : i+2])
			i++
		}
	}
	return b.String()
}

func (p *serverMemoryProfile) createEntities() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("create_entities", "Create Entities",
		"Create multiple new entities in the knowledge graph",
		serverMemorySchema(map[string]any{"entities": serverMemoryArray(serverMemoryEntitySchema(false), "")}, []string{"entities"}, false),
		serverMemorySchema(map[string]any{"entities": serverMemoryArray(serverMemoryEntitySchema(true), "")}, []string{"entities"}, true),
		false, false)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		var in []Entity
		args.items(args.root, "entities", "", func(v any, path string) { in = append(in, args.entity(v, path)) })
		if err := args.err(); err != nil {
			return nil, err
		}
		created, err := p.store.createEntities(ctx, in, p.client(ctx))
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(created, struct {
			Entities []Entity `json:"entities"`
		}{created})
	})
}

func (p *serverMemoryProfile) createRelations() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("create_relations", "Create Relations",
		"Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
		serverMemorySchema(map[string]any{"relations": serverMemoryArray(serverMemoryRelationSchema(false), "")}, []string{"relations"}, false),
		serverMemorySchema(map[string]any{"relations": serverMemoryArray(serverMemoryRelationSchema(true), "")}, []string{"relations"}, true),
		false, false)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		var in []Relation
		args.items(args.root, "relations", "", func(v any, path string) { in = append(in, args.relation(v, path)) })
		if err := args.err(); err != nil {
			return nil, err
		}
		created, err := p.store.createRelations(ctx, in)
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(created, struct {
			Relations []Relation `json:"relations"`
		}{created})
	})
}

func (p *serverMemoryProfile) addObservations() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("add_observations", "Add Observations",
		"Add new observations to existing entities in the knowledge graph",
		serverMemorySchema(map[string]any{"observations": serverMemoryArray(serverMemoryObject(map[string]any{
			"entityName": serverMemoryString("The name of the entity to add the observations to"),
			"contents":   serverMemoryArray(serverMemoryString(""), "An array of observation contents to add"),
		}, []string{"entityName", "contents"}, false), "")}, []string{"observations"}, false),
		serverMemorySchema(map[string]any{"results": serverMemoryArray(serverMemoryObject(map[string]any{
			"entityName":        serverMemoryString(""),
			"addedObservations": serverMemoryArray(serverMemoryString(""), ""),
		}, []string{"entityName", "addedObservations"}, true), "")}, []string{"results"}, true),
		false, false)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		var in []serverMemoryAddition
		args.items(args.root, "observations", "", func(v any, path string) {
			if obj, ok := args.object(v, path); ok {
				in = append(in, serverMemoryAddition{
					EntityName: args.text(obj, "entityName", path),
					Contents:   args.texts(obj, "contents", path),
				})
			}
		})
		if err := args.err(); err != nil {
			return nil, err
		}
		results, err := p.store.addObservations(ctx, in, p.client(ctx))
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(results, struct {
			Results []serverMemoryAdded `json:"results"`
		}{results})
	})
}

func (p *serverMemoryProfile) deleteEntities() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("delete_entities", "Delete Entities",
		"Delete multiple entities and their associated relations from the knowledge graph",
		serverMemorySchema(map[string]any{
			"entityNames": serverMemoryArray(serverMemoryString(""), "An array of entity names to delete"),
		}, []string{"entityNames"}, false),
		serverMemorySuccessSchema, false, true)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		names := args.texts(args.root, "entityNames", "")
		if err := args.err(); err != nil {
			return nil, err
		}
		if err := p.store.deleteEntities(ctx, names); err != nil {
			return nil, err
		}
		return serverMemorySuccess("Entities deleted successfully"), nil
	})
}

func (p *serverMemoryProfile) deleteObservations() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("delete_observations", "Delete Observations",
		"Delete specific observations from entities in the knowledge graph",
		serverMemorySchema(map[string]any{"deletions": serverMemoryArray(serverMemoryObject(map[string]any{
			"entityName":   serverMemoryString("The name of the entity containing the observations"),
			"observations": serverMemoryArray(serverMemoryString(""), "An array of observations to delete"),
		}, []string{"entityName", "observations"}, false), "")}, []string{"deletions"}, false),
		serverMemorySuccessSchema, false, true)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		var in []serverMemoryDeletion
		args.items(args.root, "deletions", "", func(v any, path string) {
			if obj, ok := args.object(v, path); ok {
				in = append(in, serverMemoryDeletion{
					EntityName:   args.text(obj, "entityName", path),
					Observations: args.texts(obj, "observations", path),
				})
			}
		})
		if err := args.err(); err != nil {
			return nil, err
		}
		if err := p.store.deleteObservations(ctx, in, p.client(ctx)); err != nil {
			return nil, err
		}
		return serverMemorySuccess("Observations deleted successfully"), nil
	})
}

func (p *serverMemoryProfile) deleteRelations() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("delete_relations", "Delete Relations",
		"Delete multiple relations from the knowledge graph",
		serverMemorySchema(map[string]any{
			"relations": serverMemoryArray(serverMemoryRelationSchema(false), "An array of relations to delete"),
		}, []string{"relations"}, false),
		serverMemorySuccessSchema, false, true)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		var in []Relation
		args.items(args.root, "relations", "", func(v any, path string) { in = append(in, args.relation(v, path)) })
		if err := args.err(); err != nil {
			return nil, err
		}
		if err := p.store.deleteRelations(ctx, in); err != nil {
			return nil, err
		}
		return serverMemorySuccess("Relations deleted successfully"), nil
	})
}

func (p *serverMemoryProfile) readGraph() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("read_graph", "Read Graph",
		"Read the entire knowledge graph",
		serverMemorySchema(map[string]any{}, nil, false), serverMemoryGraphSchema, true, false)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		if err := args.err(); err != nil {
			return nil, err
		}
		g, err := p.store.readGraph(ctx)
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(g, g)
	})
}

func (p *serverMemoryProfile) searchNodes() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("search_nodes", "Search Nodes",
		"Search for nodes in the knowledge graph based on a query",
		serverMemorySchema(map[string]any{
			"query": serverMemoryString("The search query to match against entity names, types, and observation content"),
		}, []string{"query"}, false),
		serverMemoryGraphSchema, true, false)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		query := args.text(args.root, "query", "")
		if err := args.err(); err != nil {
			return nil, err
		}
		g, err := p.store.searchNodes(ctx, query)
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(g, g)
	})
}

func (p *serverMemoryProfile) openNodes() (mcpgo.Tool, server.ToolHandlerFunc) {
	tool := serverMemoryTool("open_nodes", "Open Nodes",
		"Open specific nodes in the knowledge graph by their names",
		serverMemorySchema(map[string]any{
			"names": serverMemoryArray(serverMemoryString(""), "An array of entity names to retrieve"),
		}, []string{"names"}, false),
		serverMemoryGraphSchema, true, false)
	return tool, p.handle(func(ctx context.Context, args *serverMemoryArgs) (*mcpgo.CallToolResult, error) {
		names := args.texts(args.root, "names", "")
		if err := args.err(); err != nil {
			return nil, err
		}
		g, err := p.store.openNodes(ctx, names)
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(g, g)
	})
}

// graphResource is the whole graph as a resource, as the official server
// offers it.
func (p *serverMemoryProfile) graphResource() (mcpgo.Resource, server.ResourceHandlerFunc) {
	res := mcpgo.NewResource(serverMemoryGraphURI, "knowledge-graph",
		mcpgo.WithResourceTitle("Knowledge Graph"),
		mcpgo.WithResourceDescription("The full knowledge graph with all entities and relations"),
		mcpgo.WithMIMEType("application/json"),
	)
	return res, func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
		g, err := p.store.readGraph(ctx)
		if err != nil {
			p.log.Error("read the graph", "err", err)
			return nil, err
		}
		text, err := serverMemoryJSON(g)
		if err != nil {
			return nil, err
		}
		return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: text}}, nil
	}
}

// serverMemoryArgs decodes tool arguments (or a line of memory.jsonl) and
// collects every problem with its path, in the words of the official
// server's schema validation.
type serverMemoryArgs struct {
	tool     string // "" for a memory.jsonl line
	root     map[string]any
	problems []string
}

// serverMemoryUndefined stands for a missing property.
type serverMemoryUndefined struct{}

func serverMemoryField(obj map[string]any, key string) any {
	if v, ok := obj[key]; ok {
		return v
	}
	return serverMemoryUndefined{}
}

func serverMemoryJoin(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (a *serverMemoryArgs) fail(want string, got any, path string) {
	var kind string
	switch got.(type) {
	case serverMemoryUndefined:
		kind = "undefined"
	case nil:
		kind = "null"
	case string:
		kind = "string"
	case float64, json.Number:
		kind = "number"
	case bool:
		kind = "boolean"
	case []any:
		kind = "array"
	default:
		kind = "object"
	}
	msg := fmt.Sprintf("Invalid input: expected %s, received %s", want, kind)
	if path != "" {
		msg += " at " + path
	}
	a.problems = append(a.problems, msg)
}

func (a *serverMemoryArgs) err() error {
	if len(a.problems) == 0 {
		return nil
	}
	return serverMemoryUserError(fmt.Sprintf("MCP error -32602: Input validation error: Invalid arguments for tool %s: %s",
		a.tool, strings.Join(a.problems, "\n")))
}

func (a *serverMemoryArgs) object(v any, path string) (map[string]any, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		a.fail("object", v, path)
	}
	return obj, ok
}

// items calls each for every element of the array property key of obj.
func (a *serverMemoryArgs) items(obj map[string]any, key, path string, each func(item any, path string)) {
	v, path := serverMemoryField(obj, key), serverMemoryJoin(path, key)
	list, ok := v.([]any)
	if !ok {
		a.fail("array", v, path)
		return
	}
	for i, item := range list {
		each(item, fmt.Sprintf("%s[%d]", path, i))
	}
}

// text returns the string property key of obj.
func (a *serverMemoryArgs) text(obj map[string]any, key, path string) string {
	v := serverMemoryField(obj, key)
	s, ok := v.(string)
	if !ok {
		a.fail("string", v, serverMemoryJoin(path, key))
	}
	return s
}

// texts returns the array of strings property key of obj.
func (a *serverMemoryArgs) texts(obj map[string]any, key, path string) []string {
	out := []string{}
	a.items(obj, key, path, func(v any, path string) {
		s, ok := v.(string)
		if !ok {
			a.fail("string", v, path)
		}
		out = append(out, s)
	})
	return out
}

func (a *serverMemoryArgs) entity(v any, path string) Entity {
	obj, ok := a.object(v, path)
	if !ok {
		return Entity{}
	}
	return Entity{
		Name:         a.text(obj, "name", path),
		EntityType:   a.text(obj, "entityType", path),
		Observations: a.texts(obj, "observations", path),
	}
}

func (a *serverMemoryArgs) relation(v any, path string) Relation {
	obj, ok := a.object(v, path)
	if !ok {
		return Relation{}
	}
	return Relation{
		From:         a.text(obj, "from", path),
		To:           a.text(obj, "to", path),
		RelationType: a.text(obj, "relationType", path),
	}
}

// serverMemoryScrub removes secrets from s as the node would before storing it.
func serverMemoryScrub(s string) string {
	s, _ = secrets.Scrub(s)
	return s
}

func serverMemoryScrubAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = serverMemoryScrub(s)
	}
	return out
}

// serverMemoryContent encodes an entity as the content of its memory.
func serverMemoryContent(e Entity) (string, error) {
	var b strings.Builder
	b.WriteString("entity: ")
	b.WriteString(serverMemoryQuote(e.Name))
	b.WriteString("\ntype: ")
	b.WriteString(serverMemoryValue(e.EntityType))
	for _, o := range e.Observations {
		b.WriteString("\n- ")
		b.WriteString(serverMemoryValue(o))
	}
	if b.Len() > api.MaxContentBytes {
		return "", serverMemoryUserError(fmt.Sprintf(
			"entity %s: its name, type and observations take %d bytes, more than the %d memmesh stores for one entity; nothing was changed",
			api.Echo(e.Name), b.Len(), api.MaxContentBytes))
	}
	return b.String(), nil
}

// serverMemoryValue writes s as it is when that reads back exactly, else
// quoted.
func serverMemoryValue(s string) string {
	plain := s != "" && s[0] != '"' && s == strings.TrimSpace(s)
	for _, r := range s {
		if !plain {
			break
		}
		plain = strconv.IsPrint(r)
	}
	if plain {
		return s
	}
	return serverMemoryQuote(s)
}

// serverMemoryQuote quotes s as a Go string literal in which runs of two or
// more spaces are escaped, so that collapsing white space changes nothing.
func serverMemoryQuote(s string) string {
	q := strconv.Quote(s)
	if !strings.Contains(q, "  ") {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] == ' ' && (i > 0 && q[i-1] == ' ' || i+1 < len(q) && q[i+1] == ' ') {
			b.WriteString(`\x20`)
		} else {
			b.WriteByte(q[i])
		}
	}
	return b.String()
}

// serverMemoryUnquote reads a value written by serverMemoryValue or
// serverMemoryQuote; a quoted value that does not parse is kept as it is.
func serverMemoryUnquote(v string) string {
	if strings.HasPrefix(v, `"`) {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
	}
	return v
}

// serverMemoryDecode reads an entity from the content of its memory. It
// accepts any text: a missing name line means the title is the name, and a
// line that is not a field is an observation.
func serverMemoryDecode(content, title string) Entity {
	e := Entity{Name: title, Observations: []string{}}
	lines := strings.Split(content, "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	if v, ok := serverMemoryLine(lines[0], "entity:"); ok {
		e.Name = serverMemoryUnquote(v)
		lines = lines[1:]
	}
	if len(lines) > 0 {
		if v, ok := serverMemoryLine(lines[0], "type:"); ok {
			e.EntityType = serverMemoryUnquote(v)
			lines = lines[1:]
		}
	}
	for _, line := range lines {
		if v, ok := serverMemoryLine(line, "-"); ok {
			e.Observations = append(e.Observations, serverMemoryUnquote(v))
		} else if strings.TrimSpace(line) != "" {
			e.Observations = append(e.Observations, line)
		}
	}
	return e
}

// serverMemoryLine returns the value of a line "key value" or "key".
func serverMemoryLine(line, key string) (string, bool) {
	if line == key {
		return "", true
	}
	return strings.CutPrefix(line, key+" ")
}

// serverMemoryTitle is the title of an entity's memory: its name on one
// line, shortened to what a title may hold.
func serverMemoryTitle(name string) string {
	title := strings.Join(strings.FieldsFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if utf8.RuneCountInString(title) > api.MaxTitleRunes {
		title = string([]rune(title)[:api.MaxTitleRunes-1]) + "…"
	}
	if title == "" {
		return "(unnamed entity)"
	}
	return title
}

// serverMemoryRel returns the memmesh relation name of a relationType: the
// relationType itself when it is one, else a slug of it and a hash.
func serverMemoryRel(relationType string) string {
	var b strings.Builder
	var sep byte
	for _, r := range strings.ToLower(relationType) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			if sep != 0 && b.Len() > 0 {
				b.WriteByte(sep)
			}
			sep = 0
			b.WriteRune(r)
		case sep != 0:
		case r == '-':
			sep = '-'
		default:
			sep = '_'
		}
	}
	slug := b.String()
	if slug == "" || slug[0] < 'a' {
		slug = strings.TrimSuffix("rel_"+slug, "_")
	}
	const maxRel, maxSlug = 64, 40
	if slug == relationType && len(slug) <= maxRel {
		return slug
	}
	slug = strings.TrimRight(slug[:min(len(slug), maxSlug)], "_-")
	sum := sha256.Sum256([]byte(relationType))
	return slug + "-" + hex.EncodeToString(sum[:4])
}

// serverMemoryRelationType returns the relationType of an edge: the one in
// its notes when they hold the relationType its rel was made from.
func serverMemoryRelationType(e api.Edge) string {
	if e.Notes != "" {
		if t := serverMemoryUnquote(e.Notes); serverMemoryRel(t) == e.Rel {
			return t
		}
	}
	return e.Rel
}

// ImportResult reports what Import did.
type ImportResult struct {
	Namespace        string            `json:"namespace"`
	Entities         int               `json:"entities"`          // entity lines read
	Relations        int               `json:"relations"`         // relation lines read
	CreatedEntities  int               `json:"created_entities"`  // entities created
	UpdatedEntities  int               `json:"updated_entities"`  // existing entities that gained observations
	CreatedRelations int               `json:"created_relations"` // relations created
	Skipped          []SkippedRelation `json:"skipped"`           // relations memmesh cannot store
}

// SkippedRelation is a relation of the file that was not
// imported, and why.
type SkippedRelation struct {
	Line     int      `json:"line"`
	Relation Relation `json:"relation"`
	Reason   string   `json:"reason"`
}

// serverMemoryMaxLine caps the length of a line of memory.jsonl.
const serverMemoryMaxLine = 64 << 20

// serverMemoryFile is a parsed memory.jsonl.
type serverMemoryFile struct {
	entities  []Entity // one per name, in the order names first appear
	relations []serverMemoryFileRelation
	lines     struct{ entities, relations int }
}

type serverMemoryFileRelation struct {
	line int
	Relation
}

// serverMemoryReadFile parses the official server's memory.jsonl: one JSON
// object a line, {"type":"entity","name","entityType","observations"} or
// {"type":"relation","from","to","relationType"}; blank lines are skipped.
// Entity lines that repeat a name add their observations to the first, as
// add_observations would.
func serverMemoryReadFile(r io.Reader) (*serverMemoryFile, error) {
	f := &serverMemoryFile{}
	byName := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), serverMemoryMaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := api.CheckJSONText(line); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON object: %w", n, err)
		}
		args := &serverMemoryArgs{}
		if obj, ok := args.object(v, ""); ok {
			switch t := serverMemoryField(obj, "type"); t {
			case "entity":
				f.lines.entities++
				f.addEntity(args.entity(obj, ""), byName)
			case "relation":
				f.lines.relations++
				f.relations = append(f.relations, serverMemoryFileRelation{line: n, Relation: args.relation(obj, "")})
			default:
				args.problems = append(args.problems, fmt.Sprintf(`"type" is %s: want "entity" or "relation"`, serverMemoryShow(t)))
			}
		}
		if len(args.problems) > 0 {
			return nil, fmt.Errorf("line %d: %s", n, strings.Join(args.problems, "; "))
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d: longer than %d bytes", n+1, serverMemoryMaxLine)
	} else if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return f, nil
}

// addEntity adds an entity line, merging it into an earlier one of the
// same name.
func (f *serverMemoryFile) addEntity(e Entity, byName map[string]int) {
	i, ok := byName[e.Name]
	if !ok {
		byName[e.Name] = len(f.entities)
		f.entities = append(f.entities, e)
		return
	}
	for _, o := range e.Observations {
		if !slices.Contains(f.entities[i].Observations, o) {
			f.entities[i].Observations = append(f.entities[i].Observations, o)
		}
	}
}

// serverMemoryShow shows a decoded JSON value in a message.
func serverMemoryShow(v any) string {
	if _, ok := v.(serverMemoryUndefined); ok {
		return "missing"
	}
	data, _ := json.Marshal(v)
	return fmt.Sprint(api.Echo(string(data)))
}

// Import imports the official memory server's memory.jsonl
// from r into namespace ns ("" means DefaultNamespace), mapped as the
// server-memory profile maps its tools. The whole file is checked first: a
// bad line is reported with its number and nothing is imported. New
// entities are created, existing ones gain the observations they lack, and
// new relations are created, also those to or from names that are no
// entity, as the official server keeps them; importing the same file
// again changes nothing. A relation from a name to itself that is no
// entity is skipped and reported.
func Import(ctx context.Context, svc Service, r io.Reader, ns string) (ImportResult, error) {
	if ns == "" {
		ns = DefaultNamespace
	}
	res := ImportResult{Namespace: ns, Skipped: []SkippedRelation{}}
	f, err := serverMemoryReadFile(r)
	if err != nil {
		return res, err
	}
	res.Entities, res.Relations = f.lines.entities, f.lines.relations
	s := newServerMemoryStore(svc, ns)
	snap, err := s.sync(ctx)
	if err != nil {
		return res, err
	}

	var creates []Entity
	var additions []serverMemoryAddition
	known := map[string]bool{}
	for _, entry := range snap.entities {
		known[entry.name] = true
	}
	for _, e := range f.entities {
		name := serverMemoryScrub(e.Name)
		if snap.isEntity(name) {
			additions = append(additions, serverMemoryAddition{EntityName: e.Name, Contents: e.Observations})
		} else {
			creates = append(creates, e)
		}
		known[name] = true
	}
	createPlan, err := s.planCreate(snap, creates)
	if err != nil {
		return res, err
	}
	added, edits, err := s.planAdd(snap, additions)
	if err != nil {
		return res, err
	}
	var relations []Relation
	for _, r := range f.relations {
		from, to := serverMemoryScrub(r.From), serverMemoryScrub(r.To)
		skip := func(reason string) {
			res.Skipped = append(res.Skipped, SkippedRelation{Line: r.line, Relation: r.Relation, Reason: reason})
		}
		if from == to && !known[from] {
			skip(fmt.Sprintf("a relation from %q to itself, which is no entity", r.From))
		} else {
			relations = append(relations, r.Relation)
		}
	}

	created, err := s.applyCreate(ctx, createPlan, serverMemoryProvenance{})
	res.CreatedEntities = len(created)
	if err != nil {
		return res, err
	}
	if err := s.applyEdits(ctx, edits, serverMemoryProvenance{}); err != nil {
		return res, err
	}
	for _, a := range added {
		if len(a.AddedObservations) > 0 {
			res.UpdatedEntities++
		}
	}
	if snap, err = s.sync(ctx); err != nil { // with the new entities
		return res, err
	}
	plan, err := s.planRelations(snap, relations)
	if err != nil {
		return res, err
	}
	linked, err := s.applyRelations(ctx, snap, plan)
	res.CreatedRelations = len(linked)
	return res, err
}
