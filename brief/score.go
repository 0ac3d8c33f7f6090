package brief

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/aging"
	"github.com/memmesh/memmesh/model"
)

// briefItemMaxRunes is the content shown per item before it is cut.
const briefItemMaxRunes = 600

// What an agent must not miss comes first in a brief, whatever the
// scores: the classes below, in this order; within a class, by score.
const (
	classTask          = iota // open tasks
	classHumanDecision        // decisions people made
	classConvention           // conventions and preferences
	classOther                // everything else, by score
)

func rankClass(kind string, tier model.Tier) int {
	switch {
	case kind == "task":
		return classTask
	case kind == "decision" && tier == model.TierHuman:
		return classHumanDecision
	case kind == "convention" || kind == "preference":
		return classConvention
	}
	return classOther
}

// briefScore orders memories within a class: trust, confidence after
// decay, centrality (valid edges at the memory, not counting the links
// between near duplicates), access (maturity from reads), recency, and a
// little for decisions of any tier.
func briefScore(e *rankEntry, confidenceNow float64, degree int, maturity api.Maturity, now time.Time) float64 {
	tier := 1.0
	switch e.tier {
	case model.TierHuman:
		tier = 1.2
	case model.TierAuto:
		tier = 0.85
	}
	age := max(now.Sub(e.updated).Hours()/24, 0)
	centrality := 1 + 0.25*math.Log2(1+float64(degree))
	kind := 1.0
	if e.kind == "decision" {
		kind = 1.3
	}
	return kind * tier * (0.5 + 0.5*confidenceNow) * centrality * (0.7 + 0.3*math.Exp2(-age/30)) * aging.Weight(maturity)
}

// candidate is a memory the brief may show, and where.
type candidate struct {
	id      string
	class   int
	score   float64
	similar int
	dup     bool    // has a near duplicate
	key     float64 // priority*100 - score: the order of compare (scores stay below 100)
	section int     // a section* constant
	why     why     // for conflicts and stale alerts
}

// why holds what makes a memory a conflict or a stale alert; its text is
// made only for the memories shown.
type why struct {
	conflict     bool     // a sync conflict
	contradicts  []string // full ids of the live memories it contradicts
	supersededBy []string // full ids of the live memories that supersede it
	marked       bool     // marked stale
	ageDays      int      // not updated for so many days, past staleDays; 0: not stale by age
	staleDays    int
	orphan       bool // linked to nothing, and older than orphanAge
}

func (w *why) stale() bool {
	return w.marked || len(w.supersededBy) > 0 || w.ageDays > 0 || w.orphan
}

// reason says why a memory is listed as a conflict or a stale alert ("" for
// others).
func (mk *Maker) reason(w *why) string {
	short := func(ids []string) string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = mk.cfg.Host.ShortID(id)
		}
		return strings.Join(out, ", ")
	}
	switch {
	case w.conflict:
		return "edited on two machines at once"
	case len(w.contradicts) > 0:
		return "contradicts " + short(w.contradicts)
	}
	var stale []string
	if w.marked {
		stale = append(stale, "marked stale")
	}
	if len(w.supersededBy) > 0 {
		stale = append(stale, "superseded by "+short(w.supersededBy))
	}
	if w.ageDays > 0 {
		stale = append(stale, fmt.Sprintf("not updated for %d days (stale after %dd)", w.ageDays, w.staleDays))
	}
	if w.orphan {
		stale = append(stale, "linked to nothing, and older than 30 days")
	}
	return strings.Join(stale, "; ")
}

// priority orders candidates before their scores: conflicts, then the
// classes; stale alerts rank with the ordinary memories.
func (c *candidate) priority() int {
	switch c.section {
	case api.SectionConflicts:
		return -1
	case api.SectionStale:
		return classOther
	}
	return c.class
}

// compare orders c and d as they take the budget: by their key (priority,
// then score), then id.
func (c *candidate) compare(d *candidate) int {
	if c.key != d.key {
		return cmp.Compare(c.key, d.key)
	}
	return strings.Compare(c.id, d.id)
}

// briefItem is a memory shown in a brief, its content cut to
// briefItemMaxRunes.
func (mk *Maker) briefItem(m *model.Memory) api.BriefItem {
	content, truncated := m.Content, false
	if utf8.RuneCountInString(content) > briefItemMaxRunes {
		content, truncated = string([]rune(content)[:briefItemMaxRunes])+"…", true
	}
	title := m.Title
	if titleRepeats(title, content) {
		title = ""
	}
	return api.BriefItem{
		ID: api.IDPrefix + m.ID, ShortID: mk.cfg.Host.ShortID(m.ID), Title: title, Kind: m.Kind, Tier: m.Tier, Confidence: m.Confidence,
		Device: m.Provenance.Device, Agent: m.Provenance.Agent, UpdatedAt: m.Provenance.UpdatedAt,
		Content: content, Truncated: truncated,
	}
}

// titleRepeats reports whether a title says nothing the content does not
// start with (a title derived from the content, or none): a brief then
// leaves it out.
func titleRepeats(title, content string) bool {
	t := strings.TrimSpace(strings.TrimSuffix(title, "…"))
	c := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(content), "#>*- "))
	return strings.HasPrefix(c, t)
}
