package crdt

import (
	"testing"
	"time"

	"github.com/memmesh/memmesh/model"
)

// benchMemory is a typical captured memory: about 500 bytes of content and
// three tags.
func benchMemory() *model.Memory {
	m := testMemory()
	m.Content = "Storage commits every acknowledged mutation as one Pebble batch with " +
		"pebble.Sync: the document bytes, the materialised record, the secondary " +
		"indexes and the anti-entropy digest bucket all go in the same batch, so a " +
		"crash can never leave an index pointing at a document that is not there. " +
		"Concurrent writers share fsyncs through Pebble's group commit, which is what " +
		"keeps batch import above five thousand memories per second on the two-core " +
		"machine. Never acknowledge a capture before the batch is durable."
	m.Tags = []string{"storage", "durability", "pebble"}
	return m
}

func BenchmarkNewMemoryDocSave(b *testing.B) {
	m := benchMemory()
	var size int
	for b.Loop() {
		d, err := NewMemoryDoc(actorA, m)
		if err != nil {
			b.Fatal(err)
		}
		size = len(d.Save())
		d.Close()
	}
	b.ReportMetric(float64(size), "doc-bytes")
}

func BenchmarkLoadAppendSave(b *testing.B) {
	m := benchMemory()
	d, err := NewMemoryDoc(actorA, m)
	if err != nil {
		b.Fatal(err)
	}
	saved := d.Save()
	d.Close()
	edited := m.Content + " Measured on the 2-core machine."
	now := time.Now()
	for b.Loop() {
		d, err := LoadMemoryDoc(actorB, saved)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.AppendRevision(edited, "device-b", "", now); err != nil {
			b.Fatal(err)
		}
		if err := d.SetUpdated(now); err != nil {
			b.Fatal(err)
		}
		if err := d.Commit("edit"); err != nil {
			b.Fatal(err)
		}
		d.Save()
		d.Close()
	}
}

func BenchmarkMaterialize(b *testing.B) {
	d, err := NewMemoryDoc(actorA, benchMemory())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.AppendRevision(benchMemory().Content+" Edited.", "device-a", "", time.Now()); err != nil {
		b.Fatal(err)
	}
	if err := d.Commit("edit"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := d.Materialize(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckSaved walks the format of a memory edited 20 times on
// each of two devices and merged, as a pulled document is before
// Automerge loads it.
func BenchmarkCheckSaved(b *testing.B) {
	d, err := NewMemoryDoc(actorA, benchMemory())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	other, err := d.Fork(actorB)
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	now := time.Now()
	for i := range 20 {
		for _, doc := range []*MemoryDoc{d, other} {
			if _, err := doc.AppendRevision(benchMemory().Content+" Edited.", "device", "", now.Add(time.Duration(i)*time.Second)); err != nil {
				b.Fatal(err)
			}
			if err := doc.AddTags("tag" + string(rune('a'+i))); err != nil {
				b.Fatal(err)
			}
			if err := doc.Commit("edit"); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := d.Merge(other); err != nil {
		b.Fatal(err)
	}
	saved := d.Save()
	for b.Loop() {
		if err := checkSaved(saved); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(saved)), "doc-bytes")
}

// BenchmarkAuthors reads a typical memory's authors, as a node does for
// each document it receives while some device is revoked, beside the
// load it does anyway (BenchmarkLoad).
func BenchmarkAuthors(b *testing.B) {
	saved := savedBenchMemory(b)
	for b.Loop() {
		if _, err := Authors(saved); err != nil {
			b.Fatal(err)
		}
	}
}

// savedBenchMemory is the saved document of a typical memory.
func savedBenchMemory(b *testing.B) []byte {
	b.Helper()
	d, err := NewMemoryDoc(actorA, benchMemory())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	return d.Save()
}

func BenchmarkLoad(b *testing.B) {
	saved := savedBenchMemory(b)
	for b.Loop() {
		l, err := LoadMemoryDoc(actorB, saved)
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
}
