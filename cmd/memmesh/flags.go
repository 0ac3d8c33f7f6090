package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/memmesh/memmesh/api"
)

// Flags whose values have a range check it when they are parsed, so that a
// value out of range is a usage error (exit 2) like a malformed one, and
// none silently stands for something else (--limit 0 for the default).

// intRange is an int flag that accepts lo to hi.
type intRange struct {
	v      *int
	lo, hi int
}

// intRangeVar defines an int flag that accepts lo to hi, with default value
// (which may lie outside the range, meaning "not given").
func intRangeVar(fs *pflag.FlagSet, p *int, name string, value, lo, hi int, usage string) {
	*p = value
	fs.Var(intRange{p, lo, hi}, name, usage)
}

func (f intRange) String() string { return strconv.Itoa(*f.v) }
func (f intRange) Type() string   { return "int" }

func (f intRange) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not a whole number")
	}
	if n < f.lo || n > f.hi {
		return fmt.Errorf("use %d to %d", f.lo, f.hi)
	}
	*f.v = n
	return nil
}

// unit is a float64 flag that accepts 0 to 1.
type unit struct{ v *float64 }

// unitVar defines a float64 flag that accepts 0 to 1.
func unitVar(fs *pflag.FlagSet, p *float64, name string, value float64, usage string) {
	*p = value
	fs.Var(unit{p}, name, usage)
}

func (f unit) String() string { return strconv.FormatFloat(*f.v, 'g', -1, 64) }
func (f unit) Type() string   { return "float" }

func (f unit) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > 1 {
		return errors.New("use a number from 0 to 1")
	}
	*f.v = x
	return nil
}

// ttl is a time-to-live flag: none, or a positive duration (30d, 2w, 36h).
type ttl struct{ v *string }

// ttlVar defines a time-to-live flag.
func ttlVar(fs *pflag.FlagSet, p *string, name, usage string) {
	fs.Var(ttl{p}, name, usage)
}

func (f ttl) String() string { return *f.v }
func (f ttl) Type() string   { return "duration" }

func (f ttl) Set(s string) error {
	if _, err := api.ParseTTL(s); err != nil {
		return errors.New("use none, or a duration such as 30d, 2w or 36h")
	}
	*f.v = s
	return nil
}
