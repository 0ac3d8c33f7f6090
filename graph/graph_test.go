package graph

import (
	"reflect"
	"testing"
)

func TestCycles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edges []Edge
		want  [][]string
	}{
		{"none", nil, nil},
		{"chain", []Edge{{"a", "b"}, {"b", "c"}}, nil},
		{"diamond", []Edge{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}}, nil},
		{"two-cycle", []Edge{{"a", "b"}, {"b", "a"}}, [][]string{{"a", "b"}}},
		{"self loop", []Edge{{"x", "x"}, {"x", "x"}}, [][]string{{"x"}}},
		{"two separate cycles and a tail", []Edge{
			{"d", "e"}, {"e", "f"}, {"f", "d"}, {"a", "b"}, {"b", "a"}, {"f", "z"},
		}, [][]string{{"a", "b"}, {"d", "e", "f"}}},
	} {
		if got := Cycles(tc.edges); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Cycles = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAnalyze(t *testing.T) {
	// Two triangles joined through "bridge"; "alone" has no edge.
	edges := []Edge{
		{"a1", "a2"}, {"a2", "a3"}, {"a3", "a1"},
		{"b1", "b2"}, {"b2", "b3"}, {"b3", "b1"},
		{"a1", "bridge"}, {"bridge", "b1"},
		{"a2", "hub"}, {"a3", "hub"}, {"b2", "hub"},
	}
	a := Analyze([]string{"alone"}, edges, 100)
	if a.Degree["alone"] != 0 || a.Degree["hub"] != 3 || a.Degree["a1"] != 3 {
		t.Fatalf("degrees %v", a.Degree)
	}
	if a.Betweenness["bridge"] <= a.Betweenness["a3"] {
		t.Errorf("bridge betweenness %v not above a3's %v", a.Betweenness["bridge"], a.Betweenness["a3"])
	}
	if a.PageRank["hub"] <= a.PageRank["alone"] {
		t.Errorf("hub PageRank %v not above an isolated node's %v", a.PageRank["hub"], a.PageRank["alone"])
	}
	if b := Analyze(nil, edges, 3).Betweenness; b != nil {
		t.Errorf("betweenness computed above the cap: %v", b)
	}
}
