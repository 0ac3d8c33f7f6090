// Package vector finds the stored vectors nearest a query, for search by
// meaning.
package vector
