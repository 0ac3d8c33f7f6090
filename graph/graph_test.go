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
