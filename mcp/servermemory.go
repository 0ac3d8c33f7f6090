package mcp

// The server-memory profile serves the tools of the official MCP memory
// server (@modelcontextprotocol/server-memory): create_entities,
// create_relations, add_observations, delete_entities, delete_observations,
// delete_relations, read_graph, search_nodes and open_nodes, with the same
// names, descriptions, input and output schemas, text and structured results,
// and the knowledge-graph resource memory://knowledge-graph. A client can swap
// that server for `memmesh mcp --profile server-memory` and keep its graph
// (ImportServerMemory reads the official memory.jsonl).
//
// # Mapping
//
// The graph lives in one namespace (ServerMemoryNamespace by default); the
// profile reads and writes nothing else.
//
// An entity is one memory of kind "entity", trust tier agent, evergreen (a
// knowledge graph does not expire). Its title is the name, on one line and
// at most node.MaxTitleRunes long, for display. Its content holds the exact
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
// entity to the memory of the other. Its rel is the relationType when that
// is a memmesh relation name (lower-case kebab or snake case); otherwise it
// is a slug of the relationType followed by "-" and 8 hex digits of its
// SHA-256 ("Works At" -> "works_at-815ba396"), so that distinct relation
// types never share an edge, and the exact relationType is kept in the
// edge's notes. Any live edge between two entities of the namespace is a
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
// open_nodes return the relations that touch a returned entity. Where the
// official server stores something memmesh cannot (a relation to an entity
// that does not exist, or from an entity to itself) the tool fails and
// changes nothing. A name given twice in one create_entities call, or a
// relation given twice in one create_relations call, is created once.
// Strings are scrubbed of secrets (node.Scrub) before they are stored or
// compared. Entities are listed in the order they were created, relations
// in the order they were last created.
//
// Memories of one name created on several devices before they synced are
// shown as one entity: the type and observations of the oldest, then the
// observations the others add. Observations are added to the oldest and
// deleted from all of them.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
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
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/node"
)

// ServerMemoryService is what the server-memory profile needs from a node.
// It is implemented by *node.Node and by *web.Client.
type ServerMemoryService interface {
	Remember(ctx context.Context, req node.RememberRequest) (node.RememberResult, error)
	Update(ctx context.Context, ref string, req node.UpdateRequest) (node.Memory, error)
	Delete(ctx context.Context, ref string) (node.Memory, error)
	List(ctx context.Context, req node.ListRequest) ([]node.Memory, error)
	Link(ctx context.Context, req node.LinkRequest) (node.Edge, error)
	Unlink(ctx context.Context, from, rel, to string) (node.Edge, error)
	Edges(ctx context.Context, req node.EdgesRequest) ([]node.Edge, error)
	Changes(ctx context.Context, req node.ChangesRequest) (node.ChangesResult, error)
}

var _ ServerMemoryService = (*node.Node)(nil)

// ServerMemoryNamespace holds the knowledge graph when no namespace is given.
const ServerMemoryNamespace = "server-memory"

// ServerMemoryOptions configure the server-memory profile.
type ServerMemoryOptions struct {
	// Namespace holds the graph; "" means ServerMemoryNamespace.
	Namespace string
	// Logger receives the profile's logs; nil discards them.
	Logger *slog.Logger
}

// ServerMemoryEntity is an entity of the knowledge graph.
type ServerMemoryEntity struct {
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
}

// ServerMemoryRelation is a directed, typed relation between two entities.
type ServerMemoryRelation struct {
	From         string `json:"from"`
	To           string `json:"to"`
	RelationType string `json:"relationType"`
}

// ServerMemoryGraph is a knowledge graph, or the part of one a query returns.
type ServerMemoryGraph struct {
	Entities  []ServerMemoryEntity   `json:"entities"`
	Relations []ServerMemoryRelation `json:"relations"`
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
	serverMemoryPageSize = 1000 // the most memories node.List returns at once
	serverMemoryGraphURI = "memory://knowledge-graph"
)

// NewServerMemory returns an MCP server with the official memory server's
// tools and resource, backed by svc.
func NewServerMemory(svc ServerMemoryService, opts ServerMemoryOptions) *server.MCPServer {
	ns := opts.Namespace
	if ns == "" {
		ns = ServerMemoryNamespace
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &serverMemoryProfile{
		store: newServerMemoryStore(svc, ns),
		log:   log.With("component", "mcp", "profile", "server-memory", "namespace", ns),
		// Provenance is recorded as the memmesh profile records it.
		provenance: &handler{stdioSession: "stdio-" + strings.ToLower(rand.Text()[:12])},
	}
	s := server.NewMCPServer("memmesh", node.Version(),
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
	store      *serverMemoryStore
	log        *slog.Logger
	provenance *handler // its caller method names the client of a request
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
		if errors.As(err, &user) || errors.Is(err, node.ErrInvalid) {
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
	agent, session := p.provenance.caller(ctx)
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
		var in []ServerMemoryEntity
		args.items(args.root, "entities", "", func(v any, path string) { in = append(in, args.entity(v, path)) })
		if err := args.err(); err != nil {
			return nil, err
		}
		created, err := p.store.createEntities(ctx, in, p.client(ctx))
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(created, struct {
			Entities []ServerMemoryEntity `json:"entities"`
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
		var in []ServerMemoryRelation
		args.items(args.root, "relations", "", func(v any, path string) { in = append(in, args.relation(v, path)) })
		if err := args.err(); err != nil {
			return nil, err
		}
		created, err := p.store.createRelations(ctx, in)
		if err != nil {
			return nil, err
		}
		return serverMemoryResult(created, struct {
			Relations []ServerMemoryRelation `json:"relations"`
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
		results, err := p.store.addObservations(ctx, in)
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
		if err := p.store.deleteObservations(ctx, in); err != nil {
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
		var in []ServerMemoryRelation
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

func (a *serverMemoryArgs) entity(v any, path string) ServerMemoryEntity {
	obj, ok := a.object(v, path)
	if !ok {
		return ServerMemoryEntity{}
	}
	return ServerMemoryEntity{
		Name:         a.text(obj, "name", path),
		EntityType:   a.text(obj, "entityType", path),
		Observations: a.texts(obj, "observations", path),
	}
}

func (a *serverMemoryArgs) relation(v any, path string) ServerMemoryRelation {
	obj, ok := a.object(v, path)
	if !ok {
		return ServerMemoryRelation{}
	}
	return ServerMemoryRelation{
		From:         a.text(obj, "from", path),
		To:           a.text(obj, "to", path),
		RelationType: a.text(obj, "relationType", path),
	}
}

// serverMemoryScrub removes secrets from s as the node would before storing it.
func serverMemoryScrub(s string) string {
	s, _ = node.Scrub(s)
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
func serverMemoryContent(e ServerMemoryEntity) (string, error) {
	var b strings.Builder
	b.WriteString("entity: ")
	b.WriteString(serverMemoryQuote(e.Name))
	b.WriteString("\ntype: ")
	b.WriteString(serverMemoryValue(e.EntityType))
	for _, o := range e.Observations {
		b.WriteString("\n- ")
		b.WriteString(serverMemoryValue(o))
	}
	if b.Len() > node.MaxContentBytes {
		return "", serverMemoryUserError(fmt.Sprintf(
			"entity %s: its name, type and observations take %d bytes, more than the %d memmesh stores for one entity; nothing was changed",
			e.Name, b.Len(), node.MaxContentBytes))
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
func serverMemoryDecode(content, title string) ServerMemoryEntity {
	e := ServerMemoryEntity{Name: title, Observations: []string{}}
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
	if utf8.RuneCountInString(title) > node.MaxTitleRunes {
		title = string([]rune(title)[:node.MaxTitleRunes-1]) + "…"
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
func serverMemoryRelationType(e node.Edge) string {
	if e.Notes != "" {
		if t := serverMemoryUnquote(e.Notes); serverMemoryRel(t) == e.Rel {
			return t
		}
	}
	return e.Rel
}

// serverMemoryStore keeps the knowledge graph in one namespace of a node.
type serverMemoryStore struct {
	svc  ServerMemoryService
	ns   string
	page int // memories listed at once

	mu   sync.Mutex // serialises this process's changes to the graph
	last time.Time  // creation time of the newest entity made here
}

func newServerMemoryStore(svc ServerMemoryService, ns string) *serverMemoryStore {
	return &serverMemoryStore{svc: svc, ns: ns, page: serverMemoryPageSize}
}

// serverMemorySnapshot is the graph's entities as read from the node.
type serverMemorySnapshot struct {
	entities []*serverMemoryEntry // in the order they were created
	byName   map[string]*serverMemoryEntry
	byID     map[string]*serverMemoryEntry // by the id of each of its memories
}

// serverMemoryEntry is one entity and the memories that hold it: one, or
// several when devices created the same name before they synced, the
// oldest first.
type serverMemoryEntry struct {
	name  string
	pos   int // index in the snapshot's entities
	parts []*serverMemoryPart
}

// serverMemoryPart is one memory holding an entity.
type serverMemoryPart struct {
	id           string
	content      string
	entityType   string
	observations []string
}

func newServerMemorySnapshot() *serverMemorySnapshot {
	return &serverMemorySnapshot{byName: map[string]*serverMemoryEntry{}, byID: map[string]*serverMemoryEntry{}}
}

// add records a memory holding entity e.
func (s *serverMemorySnapshot) add(id, content string, e ServerMemoryEntity) {
	entry := s.byName[e.Name]
	if entry == nil {
		entry = &serverMemoryEntry{name: e.Name, pos: len(s.entities)}
		s.entities = append(s.entities, entry)
		s.byName[e.Name] = entry
	}
	entry.parts = append(entry.parts, &serverMemoryPart{id: id, content: content, entityType: e.EntityType, observations: e.Observations})
	s.byID[id] = entry
}

// entity is the entity as the graph shows it.
func (e *serverMemoryEntry) entity() ServerMemoryEntity {
	obs := slices.Clone(e.parts[0].observations)
	for _, p := range e.parts[1:] {
		for _, o := range p.observations {
			if !slices.Contains(obs, o) {
				obs = append(obs, o)
			}
		}
	}
	return ServerMemoryEntity{Name: e.name, EntityType: e.parts[0].entityType, Observations: obs}
}

// at returns the creation time of a new entity: now, but after the previous
// one, so that entities made in one call keep their order (memmesh times
// have millisecond precision).
func (s *serverMemoryStore) at() time.Time {
	t := time.Now().UTC().Truncate(time.Millisecond)
	if !t.After(s.last) {
		t = s.last.Add(time.Millisecond)
	}
	s.last = t
	return t
}

// memories lists every entity memory of the namespace, a page at a time
// from the most recently updated.
func (s *serverMemoryStore) memories(ctx context.Context) ([]node.Memory, error) {
	var all []node.Memory
	seen := map[string]bool{}
	add := func(ms []node.Memory) {
		for _, m := range ms {
			if !seen[m.ID] {
				seen[m.ID] = true
				all = append(all, m)
			}
		}
	}
	list := func(since, until time.Time) ([]node.Memory, error) {
		ms, err := s.svc.List(ctx, node.ListRequest{Namespace: s.ns, Kind: serverMemoryKind, Since: since, Until: until, Limit: s.page})
		if err != nil {
			return nil, fmt.Errorf("list entities: %w", err)
		}
		return ms, nil
	}
	var until time.Time
	for {
		page, err := list(time.Time{}, until)
		if err != nil {
			return nil, err
		}
		add(page)
		if len(page) < s.page {
			return all, nil
		}
		// The memories updated at the instant of the page's last one may
		// straddle the page's end: list them all before going on with
		// older ones.
		last := page[len(page)-1].Provenance.UpdatedAt
		same, err := list(last, last.Add(time.Nanosecond))
		if err != nil {
			return nil, err
		}
		if len(same) == s.page {
			return nil, fmt.Errorf("list entities: %d or more were updated at the same instant", s.page)
		}
		add(same)
		until = last
	}
}

// load reads the graph's entities.
func (s *serverMemoryStore) load(ctx context.Context) (*serverMemorySnapshot, error) {
	mems, err := s.memories(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(mems, func(a, b node.Memory) int {
		return cmp.Or(a.Provenance.CreatedAt.Compare(b.Provenance.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	snap := newServerMemorySnapshot()
	for _, m := range mems {
		snap.add(m.ID, m.Content, serverMemoryDecode(m.Content, m.Title))
	}
	return snap, nil
}

// edges returns the live edges between entities that touch the memories of
// entries, oldest first.
func (s *serverMemoryStore) edges(ctx context.Context, snap *serverMemorySnapshot, entries []*serverMemoryEntry, dir node.Direction) ([]node.Edge, error) {
	var ids []string
	for _, entry := range entries {
		for _, p := range entry.parts {
			ids = append(ids, p.id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	all, err := s.svc.Edges(ctx, node.EdgesRequest{Endpoints: ids, Direction: dir})
	if err != nil {
		return nil, fmt.Errorf("relations: %w", err)
	}
	var out []node.Edge
	for _, e := range all {
		// Links memmesh made itself between near duplicates are not
		// relations anybody created.
		if snap.byID[e.From] != nil && snap.byID[e.To] != nil && e.Origin != node.OriginAutoLink {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b node.Edge) int {
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt),
			cmp.Compare(snap.byID[a.From].pos, snap.byID[b.From].pos),
			cmp.Compare(snap.byID[a.To].pos, snap.byID[b.To].pos),
			strings.Compare(a.Rel, b.Rel))
	})
	return out, nil
}

// relations returns the relations that touch entries.
func (s *serverMemoryStore) relations(ctx context.Context, snap *serverMemorySnapshot, entries []*serverMemoryEntry, dir node.Direction) ([]ServerMemoryRelation, error) {
	edges, err := s.edges(ctx, snap, entries, dir)
	if err != nil {
		return nil, err
	}
	out := []ServerMemoryRelation{}
	seen := map[ServerMemoryRelation]bool{}
	for _, e := range edges {
		r := ServerMemoryRelation{From: snap.byID[e.From].name, To: snap.byID[e.To].name, RelationType: serverMemoryRelationType(e)}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// graph returns entries and the relations that touch them.
func (s *serverMemoryStore) graph(ctx context.Context, snap *serverMemorySnapshot, entries []*serverMemoryEntry, dir node.Direction) (ServerMemoryGraph, error) {
	g := ServerMemoryGraph{Entities: make([]ServerMemoryEntity, len(entries))}
	for i, e := range entries {
		g.Entities[i] = e.entity()
	}
	var err error
	g.Relations, err = s.relations(ctx, snap, entries, dir)
	return g, err
}

func (s *serverMemoryStore) readGraph(ctx context.Context) (ServerMemoryGraph, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return ServerMemoryGraph{}, err
	}
	return s.graph(ctx, snap, snap.entities, node.Out)
}

// searchNodes returns the entities whose name, type or an observation
// contains query, ignoring case, and the relations that touch them.
func (s *serverMemoryStore) searchNodes(ctx context.Context, query string) (ServerMemoryGraph, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return ServerMemoryGraph{}, err
	}
	q := strings.ToLower(serverMemoryScrub(query))
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), q) }
	var found []*serverMemoryEntry
	for _, entry := range snap.entities {
		e := entry.entity()
		if has(e.Name) || has(e.EntityType) || slices.ContainsFunc(e.Observations, has) {
			found = append(found, entry)
		}
	}
	return s.graph(ctx, snap, found, node.Both)
}

// openNodes returns the named entities and the relations that touch them.
func (s *serverMemoryStore) openNodes(ctx context.Context, names []string) (ServerMemoryGraph, error) {
	snap, err := s.load(ctx)
	if err != nil {
		return ServerMemoryGraph{}, err
	}
	names = serverMemoryScrubAll(names)
	var found []*serverMemoryEntry
	for _, entry := range snap.entities {
		if slices.Contains(names, entry.name) {
			found = append(found, entry)
		}
	}
	return s.graph(ctx, snap, found, node.Both)
}

// serverMemoryCreate is an entity to create and its memory's content.
type serverMemoryCreate struct {
	entity  ServerMemoryEntity
	content string
}

func (s *serverMemoryStore) createEntities(ctx context.Context, in []ServerMemoryEntity, prov serverMemoryProvenance) ([]ServerMemoryEntity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := s.planCreate(snap, in)
	if err != nil {
		return nil, err
	}
	return s.applyCreate(ctx, snap, plan, prov)
}

// planCreate checks the entities to create, skipping the names that exist
// or come earlier in the list.
func (s *serverMemoryStore) planCreate(snap *serverMemorySnapshot, in []ServerMemoryEntity) ([]serverMemoryCreate, error) {
	var plan []serverMemoryCreate
	planned := map[string]bool{}
	for _, e := range in {
		e = ServerMemoryEntity{
			Name:         serverMemoryScrub(e.Name),
			EntityType:   serverMemoryScrub(e.EntityType),
			Observations: serverMemoryScrubAll(e.Observations),
		}
		if snap.byName[e.Name] != nil || planned[e.Name] {
			continue
		}
		planned[e.Name] = true
		content, err := serverMemoryContent(e)
		if err != nil {
			return nil, err
		}
		plan = append(plan, serverMemoryCreate{entity: e, content: content})
	}
	return plan, nil
}

// applyCreate stores planned entities and returns those it created.
func (s *serverMemoryStore) applyCreate(ctx context.Context, snap *serverMemorySnapshot, plan []serverMemoryCreate, prov serverMemoryProvenance) ([]ServerMemoryEntity, error) {
	created := []ServerMemoryEntity{}
	for _, c := range plan {
		res, err := s.svc.Remember(ctx, node.RememberRequest{
			Namespace: s.ns,
			Title:     serverMemoryTitle(c.entity.Name),
			Content:   c.content,
			Kind:      serverMemoryKind,
			Tier:      crdt.TierAgent,
			Evergreen: true,
			Agent:     prov.agent,
			Session:   prov.session,
			At:        s.at(),
		})
		if err != nil {
			return created, fmt.Errorf("create entity %s: %w", c.entity.Name, err)
		}
		if res.DuplicateOf != "" {
			continue // created meanwhile by another process
		}
		snap.add(res.ID, c.content, c.entity)
		created = append(created, c.entity)
	}
	return created, nil
}

// serverMemoryEdit is a new list of observations for one memory.
type serverMemoryEdit struct {
	entry        *serverMemoryEntry
	part         *serverMemoryPart
	observations []string
	content      string // the memory's new content, set by encode
}

// serverMemoryEdits collects the edits of a change, one per memory.
type serverMemoryEdits struct {
	order  []*serverMemoryEdit
	byPart map[*serverMemoryPart]*serverMemoryEdit
}

// of returns the edit of part, starting from its current observations.
func (e *serverMemoryEdits) of(entry *serverMemoryEntry, part *serverMemoryPart) *serverMemoryEdit {
	if ed := e.byPart[part]; ed != nil {
		return ed
	}
	ed := &serverMemoryEdit{entry: entry, part: part, observations: slices.Clone(part.observations)}
	if e.byPart == nil {
		e.byPart = map[*serverMemoryPart]*serverMemoryEdit{}
	}
	e.byPart[part] = ed
	e.order = append(e.order, ed)
	return ed
}

// encode returns the edits that change their memory, with its new content.
// It fails, before anything is written, if a content is too big.
func (e *serverMemoryEdits) encode() ([]*serverMemoryEdit, error) {
	var changed []*serverMemoryEdit
	for _, ed := range e.order {
		content, err := serverMemoryContent(ServerMemoryEntity{Name: ed.entry.name, EntityType: ed.part.entityType, Observations: ed.observations})
		if err != nil {
			return nil, err
		}
		if content != ed.part.content {
			ed.content = content
			changed = append(changed, ed)
		}
	}
	return changed, nil
}

// applyEdits stores encoded edits, each as a new revision of its memory.
func (s *serverMemoryStore) applyEdits(ctx context.Context, edits []*serverMemoryEdit) error {
	for _, ed := range edits {
		if _, err := s.svc.Update(ctx, ed.part.id, node.UpdateRequest{Content: &ed.content}); err != nil {
			return fmt.Errorf("update entity %s: %w", ed.entry.name, err)
		}
		ed.part.content, ed.part.observations = ed.content, ed.observations
	}
	return nil
}

func (s *serverMemoryStore) addObservations(ctx context.Context, in []serverMemoryAddition) ([]serverMemoryAdded, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	results, edits, err := s.planAdd(snap, in)
	if err != nil {
		return nil, err
	}
	return results, s.applyEdits(ctx, edits)
}

// planAdd works out, in order, which observations each addition adds: those
// the entity does not have yet. They go to the entity's oldest memory.
func (s *serverMemoryStore) planAdd(snap *serverMemorySnapshot, in []serverMemoryAddition) ([]serverMemoryAdded, []*serverMemoryEdit, error) {
	results := make([]serverMemoryAdded, 0, len(in))
	current := map[*serverMemoryEntry][]string{} // observations as the entity shows them
	var edits serverMemoryEdits
	for _, a := range in {
		name := serverMemoryScrub(a.EntityName)
		entry := snap.byName[name]
		if entry == nil {
			return nil, nil, serverMemoryUserError(fmt.Sprintf("Entity with name %s not found", name))
		}
		obs, ok := current[entry]
		if !ok {
			obs = entry.entity().Observations
		}
		added := []string{}
		for _, c := range serverMemoryScrubAll(a.Contents) {
			if !slices.Contains(obs, c) {
				added = append(added, c)
			}
		}
		current[entry] = append(obs, added...)
		ed := edits.of(entry, entry.parts[0])
		ed.observations = append(ed.observations, added...)
		results = append(results, serverMemoryAdded{EntityName: name, AddedObservations: added})
	}
	changed, err := edits.encode()
	if err != nil {
		return nil, nil, err
	}
	return results, changed, nil
}

// deleteObservations removes every occurrence of the observations from the
// named entities; unknown entities are ignored.
func (s *serverMemoryStore) deleteObservations(ctx context.Context, in []serverMemoryDeletion) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return err
	}
	var edits serverMemoryEdits
	for _, d := range in {
		entry := snap.byName[serverMemoryScrub(d.EntityName)]
		if entry == nil {
			continue
		}
		drop := serverMemoryScrubAll(d.Observations)
		for _, p := range entry.parts {
			ed := edits.of(entry, p)
			ed.observations = slices.DeleteFunc(ed.observations, func(o string) bool { return slices.Contains(drop, o) })
		}
	}
	changed, err := edits.encode()
	if err != nil {
		return err
	}
	return s.applyEdits(ctx, changed)
}

// deleteEntities deletes the named entities and their relations; unknown
// names are ignored.
func (s *serverMemoryStore) deleteEntities(ctx context.Context, names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return err
	}
	var doomed []*serverMemoryEntry
	for _, name := range serverMemoryScrubAll(names) {
		if entry := snap.byName[name]; entry != nil && !slices.Contains(doomed, entry) {
			doomed = append(doomed, entry)
		}
	}
	edges, err := s.edges(ctx, snap, doomed, node.Both)
	if err != nil {
		return err
	}
	for _, e := range edges {
		if _, err := s.svc.Unlink(ctx, e.From, e.Rel, e.To); err != nil && !errors.Is(err, node.ErrNotFound) {
			return fmt.Errorf("delete relation %s %s %s: %w", e.From, e.Rel, e.To, err)
		}
	}
	for _, entry := range doomed {
		for _, p := range entry.parts {
			if _, err := s.svc.Delete(ctx, p.id); err != nil && !errors.Is(err, node.ErrNotFound) {
				return fmt.Errorf("delete entity %s: %w", entry.name, err)
			}
		}
	}
	return nil
}

// serverMemoryLink is a relation to create and the memories it joins.
type serverMemoryLink struct {
	relation ServerMemoryRelation
	from, to string
}

func (s *serverMemoryStore) createRelations(ctx context.Context, in []ServerMemoryRelation) ([]ServerMemoryRelation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := s.planRelations(ctx, snap, in)
	if err != nil {
		return nil, err
	}
	return s.applyRelations(ctx, plan)
}

// planRelations checks the relations to create, skipping those that exist
// or come earlier in the list. Both entities must exist and differ.
func (s *serverMemoryStore) planRelations(ctx context.Context, snap *serverMemorySnapshot, in []ServerMemoryRelation) ([]serverMemoryLink, error) {
	var froms []*serverMemoryEntry
	rels := make([]ServerMemoryRelation, len(in))
	for i, r := range in {
		r = ServerMemoryRelation{From: serverMemoryScrub(r.From), To: serverMemoryScrub(r.To), RelationType: serverMemoryScrub(r.RelationType)}
		if err := serverMemoryCheckRelation(snap, r); err != nil {
			return nil, err
		}
		rels[i] = r
		if from := snap.byName[r.From]; !slices.Contains(froms, from) {
			froms = append(froms, from)
		}
	}
	existing, err := s.relations(ctx, snap, froms, node.Out)
	if err != nil {
		return nil, err
	}
	have := map[ServerMemoryRelation]bool{}
	for _, r := range existing {
		have[r] = true
	}
	var plan []serverMemoryLink
	for _, r := range rels {
		if have[r] {
			continue
		}
		have[r] = true
		plan = append(plan, serverMemoryLink{relation: r, from: snap.byName[r.From].parts[0].id, to: snap.byName[r.To].parts[0].id})
	}
	return plan, nil
}

// serverMemoryCheckRelation tells why memmesh cannot store r, if it cannot.
func serverMemoryCheckRelation(snap *serverMemorySnapshot, r ServerMemoryRelation) error {
	for _, name := range []string{r.From, r.To} {
		if snap.byName[name] == nil {
			return serverMemoryUserError(fmt.Sprintf(
				"Entity with name %s not found: memmesh stores relations between existing entities only; create it with create_entities first. Nothing was changed.", name))
		}
	}
	if r.From == r.To {
		return serverMemoryUserError(fmt.Sprintf(
			"Relation %s from entity %s to itself: memmesh stores relations between two different entities only. Nothing was changed.", r.RelationType, r.From))
	}
	return nil
}

// applyRelations creates planned relations and returns them.
func (s *serverMemoryStore) applyRelations(ctx context.Context, plan []serverMemoryLink) ([]ServerMemoryRelation, error) {
	created := []ServerMemoryRelation{}
	for _, l := range plan {
		t := l.relation.RelationType
		req := node.LinkRequest{From: l.from, Rel: serverMemoryRel(t), To: l.to, Origin: serverMemoryOrigin}
		if req.Rel != t {
			req.Notes = serverMemoryValue(t)
		}
		if _, err := s.svc.Link(ctx, req); err != nil {
			return created, fmt.Errorf("create relation %s %s %s: %w", l.relation.From, t, l.relation.To, err)
		}
		created = append(created, l.relation)
	}
	return created, nil
}

// deleteRelations deletes the relations; unknown ones are ignored.
func (s *serverMemoryStore) deleteRelations(ctx context.Context, in []ServerMemoryRelation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.load(ctx)
	if err != nil {
		return err
	}
	for _, r := range in {
		from, to := snap.byName[serverMemoryScrub(r.From)], snap.byName[serverMemoryScrub(r.To)]
		if from == nil || to == nil {
			continue
		}
		rel := serverMemoryRel(serverMemoryScrub(r.RelationType))
		for _, f := range from.parts {
			for _, t := range to.parts {
				if _, err := s.svc.Unlink(ctx, f.id, rel, t.id); err != nil && !errors.Is(err, node.ErrNotFound) {
					return fmt.Errorf("delete relation %s %s %s: %w", r.From, r.RelationType, r.To, err)
				}
			}
		}
	}
	return nil
}

// ServerMemoryImportResult reports what ImportServerMemory did.
type ServerMemoryImportResult struct {
	Namespace        string                        `json:"namespace"`
	Entities         int                           `json:"entities"`          // entity lines read
	Relations        int                           `json:"relations"`         // relation lines read
	CreatedEntities  int                           `json:"created_entities"`  // entities created
	UpdatedEntities  int                           `json:"updated_entities"`  // existing entities that gained observations
	CreatedRelations int                           `json:"created_relations"` // relations created
	Skipped          []ServerMemorySkippedRelation `json:"skipped"`           // relations memmesh cannot store
}

// ServerMemorySkippedRelation is a relation of the file that was not
// imported, and why.
type ServerMemorySkippedRelation struct {
	Line     int                  `json:"line"`
	Relation ServerMemoryRelation `json:"relation"`
	Reason   string               `json:"reason"`
}

// serverMemoryMaxLine caps the length of a line of memory.jsonl.
const serverMemoryMaxLine = 64 << 20

// serverMemoryFile is a parsed memory.jsonl.
type serverMemoryFile struct {
	entities  []ServerMemoryEntity // one per name, in the order names first appear
	relations []serverMemoryFileRelation
	lines     struct{ entities, relations int }
}

type serverMemoryFileRelation struct {
	line int
	ServerMemoryRelation
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
				f.relations = append(f.relations, serverMemoryFileRelation{line: n, ServerMemoryRelation: args.relation(obj, "")})
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
func (f *serverMemoryFile) addEntity(e ServerMemoryEntity, byName map[string]int) {
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
	return string(data)
}

// ImportServerMemory imports the official memory server's memory.jsonl
// from r into namespace ns ("" means ServerMemoryNamespace), mapped as the
// server-memory profile maps its tools. The whole file is checked first: a
// bad line is reported with its number and nothing is imported. New
// entities are created, existing ones gain the observations they lack, and
// new relations are created; importing the same file again changes
// nothing. Relations memmesh cannot store (to an entity that does not
// exist, or from an entity to itself) are skipped and reported.
func ImportServerMemory(ctx context.Context, svc ServerMemoryService, r io.Reader, ns string) (ServerMemoryImportResult, error) {
	if ns == "" {
		ns = ServerMemoryNamespace
	}
	res := ServerMemoryImportResult{Namespace: ns, Skipped: []ServerMemorySkippedRelation{}}
	f, err := serverMemoryReadFile(r)
	if err != nil {
		return res, err
	}
	res.Entities, res.Relations = f.lines.entities, f.lines.relations
	s := newServerMemoryStore(svc, ns)
	snap, err := s.load(ctx)
	if err != nil {
		return res, err
	}

	var creates []ServerMemoryEntity
	var additions []serverMemoryAddition
	known := map[string]bool{}
	for name := range snap.byName {
		known[name] = true
	}
	for _, e := range f.entities {
		name := serverMemoryScrub(e.Name)
		if snap.byName[name] != nil {
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
	var relations []ServerMemoryRelation
	for _, r := range f.relations {
		from, to := serverMemoryScrub(r.From), serverMemoryScrub(r.To)
		skip := func(reason string) {
			res.Skipped = append(res.Skipped, ServerMemorySkippedRelation{Line: r.line, Relation: r.ServerMemoryRelation, Reason: reason})
		}
		switch {
		case !known[from]:
			skip(fmt.Sprintf("entity %q does not exist", r.From))
		case !known[to]:
			skip(fmt.Sprintf("entity %q does not exist", r.To))
		case from == to:
			skip("a relation from an entity to itself")
		default:
			relations = append(relations, r.ServerMemoryRelation)
		}
	}

	created, err := s.applyCreate(ctx, snap, createPlan, serverMemoryProvenance{})
	res.CreatedEntities = len(created)
	if err != nil {
		return res, err
	}
	if err := s.applyEdits(ctx, edits); err != nil {
		return res, err
	}
	for _, a := range added {
		if len(a.AddedObservations) > 0 {
			res.UpdatedEntities++
		}
	}
	plan, err := s.planRelations(ctx, snap, relations)
	if err != nil {
		return res, err
	}
	linked, err := s.applyRelations(ctx, plan)
	res.CreatedRelations = len(linked)
	return res, err
}
