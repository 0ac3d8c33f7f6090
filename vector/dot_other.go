//go:build !amd64

package vector

// dotInt8 is Σ a·b over len(a) values; b holds at least as many.
func dotInt8(a, b []int8) int32 { return dotInt8Go(a, b) }
