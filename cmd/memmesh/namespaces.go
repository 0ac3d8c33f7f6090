package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/node"
)

// hintIfEmpty follows an empty human answer about namespace ns ("" for the
// default) with what it means when ns holds no memories at all: which
// namespaces do. Then "nothing stale in default" after capturing into
// backend is not read as "nothing to report". It prints nothing in JSON or
// brief output, or when it cannot ask the daemon.
func (a *app) hintIfEmpty(ctx context.Context, ns string, empty bool) {
	if !empty || a.format != "human" {
		return
	}
	norm, err := node.NormalizeNamespace(ns)
	if err != nil {
		return
	}
	c, err := a.client(ctx)
	if err != nil {
		return
	}
	st, err := c.Stats(ctx)
	if err != nil || st.ByNamespace[norm] > 0 {
		return
	}
	if len(st.ByNamespace) == 0 {
		fmt.Fprintln(a.stdout, "No memories are stored yet.")
		return
	}
	names := make([]string, 0, len(st.ByNamespace))
	for name := range st.ByNamespace {
		names = append(names, name)
	}
	slices.SortFunc(names, func(x, y string) int {
		return cmp.Or(cmp.Compare(st.ByNamespace[y], st.ByNamespace[x]), strings.Compare(x, y))
	})
	var held []string
	for _, name := range names[:min(len(names), 5)] {
		held = append(held, fmt.Sprintf("%s (%d)", name, st.ByNamespace[name]))
	}
	if len(names) > 5 {
		held = append(held, fmt.Sprintf("and %d more", len(names)-5))
	}
	fmt.Fprintf(a.stdout, "Namespace %s holds no memories; these do: %s. Choose one with --ns.\n", norm, strings.Join(held, ", "))
}
