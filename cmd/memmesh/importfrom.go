package main

import (
	"context"
	"fmt"
	"io"

	"github.com/memmesh/memmesh/mcp/servermemory"
)

// importServerMemory imports the memory.jsonl of the official MCP memory
// server into namespace ns, as `memmesh mcp --profile server-memory` maps
// its graph.
func (a *app) importServerMemory(ctx context.Context, r io.Reader, ns string) error {
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	res, err := servermemory.Import(ctx, c, r, ns)
	if err != nil {
		return err
	}
	return a.emit(res, func(w io.Writer) {
		fmt.Fprintf(w, "Imported %s and %s into namespace %s (the file has %s and %s).\n",
			importCount(res.CreatedEntities, "entity", "entities"), importCount(res.CreatedRelations, "relation", "relations"), res.Namespace,
			importCount(res.Entities, "entity", "entities"), importCount(res.Relations, "relation", "relations"))
		if res.UpdatedEntities > 0 {
			fmt.Fprintf(w, "Added observations to %s already there.\n", importCount(res.UpdatedEntities, "entity", "entities"))
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(w, "Skipped line %d, relation %q from %q to %q: %s.\n",
				s.Line, s.Relation.RelationType, s.Relation.From, s.Relation.To, s.Reason)
		}
	}, func(w io.Writer) { fmt.Fprintln(w, res.CreatedEntities, res.CreatedRelations) })
}

// importCount writes n with the noun in the singular or the plural.
func importCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
