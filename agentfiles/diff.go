package agentfiles

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the table a diff fills (lines of one side times
// lines of the other); past it, the diff lists the whole of both sides.
const maxDiffCells = 1 << 22

// lineDiff lists the lines that differ from a to b, in order: "-" before
// a line only a has, "+" before a line only b has (the longest common
// subsequence of lines is left out).
func lineDiff(a, b string) string {
	as, bs := splitLines(a), splitLines(b)
	var out strings.Builder
	if len(as)*len(bs) > maxDiffCells {
		for _, l := range as {
			fmt.Fprintf(&out, "-%s\n", l)
		}
		for _, l := range bs {
			fmt.Fprintf(&out, "+%s\n", l)
		}
		return out.String()
	}
	// common[i][j] is the length of the longest common subsequence of
	// as[i:] and bs[j:].
	common := make([][]int32, len(as)+1)
	for i := range common {
		common[i] = make([]int32, len(bs)+1)
	}
	for i := len(as) - 1; i >= 0; i-- {
		for j := len(bs) - 1; j >= 0; j-- {
			if as[i] == bs[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(as) || j < len(bs) {
		switch {
		case i < len(as) && j < len(bs) && as[i] == bs[j]:
			i, j = i+1, j+1
		case i < len(as) && (j == len(bs) || common[i+1][j] >= common[i][j+1]):
			fmt.Fprintf(&out, "-%s\n", as[i])
			i++
		default:
			fmt.Fprintf(&out, "+%s\n", bs[j])
			j++
		}
	}
	return out.String()
}

// splitLines returns the lines of s, none for "".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
