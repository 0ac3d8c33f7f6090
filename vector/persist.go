package vector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// load reads the vectors file into the store, cutting off a bad tail,
// and brings the graph up to date: from the graph file when it indexes
// a prefix of the vectors file (linking in what came after), else by
// linking every vector in.
func (s *Set) load() error {
	removeTemps(s.dir)
	path := s.path(logName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	s.f = f
	info, err := f.Stat()
	if err != nil {
		return err
	}
	dims, tag, gen, start, herr := readHeader(f)
	switch {
	case info.Size() == 0:
		return s.reset()
	case herr != nil:
		s.log.Warn("vectors file unreadable, starting empty", "err", herr)
		return s.reset()
	case dims != s.dims || tag != s.tag:
		s.log.Info("vectors of another model, starting empty", "tag", tag, "dims", dims)
		return s.reset()
	}
	s.gen = gen
	saved := readGraphFile(s.path(graphName), s.log)
	st := s.st
	var (
		atSaved = saved != nil && saved.offset == start && saved.chain == 0
		capThen = st.cap()
		dirty   []uint32
	)
	end, chain, rerr := replay(f, start, info.Size(), s.dims, func(end int64, chain uint32, op byte, cs []change) {
		after := atSaved
		for _, c := range cs {
			if c.op == opDelete {
				if slot, ok := st.remove(c.id); ok && after {
					dirty = append(dirty, slot)
				}
				continue
			}
			slot := st.put(c.id, c.sum, c.scale, c.code)
			if after {
				dirty = append(dirty, slot)
			}
		}
		if !after && saved != nil && end == saved.offset && chain == saved.chain {
			atSaved, capThen = true, st.cap()
		}
	})
	if !atSaved {
		dirty = nil
	}
	if rerr != nil {
		s.log.Warn("vectors file damaged, cutting it off there", "at", end, "dropped_bytes", info.Size()-end, "err", rerr)
		if err := f.Truncate(end); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	s.size, s.chain = end, chain
	for _, id := range st.ids {
		if id != "" {
			s.liveBytes += int64(itemSize(opPut, id, s.dims))
		}
	}
	s.loadGraph(saved, atSaved, gen, capThen, dirty)
	return s.upkeep()
}

// loadGraph takes the saved graph if it indexes the vectors read up to
// its offset, then relinks the dirty slots, changed after it, and marks
// the graph ready; otherwise it leaves the graph empty, for build.
func (s *Set) loadGraph(saved *savedGraph, atSaved bool, gen uint64, capThen int, dirty []uint32) {
	if !atSaved || saved.gen != gen {
		s.ready.Store(s.st.len() == 0)
		return
	}
	if err := saved.install(s.g, capThen, dirty); err != nil {
		// install left the graph empty.
		s.log.Warn("graph file does not fit the vectors, rebuilding it", "err", err)
		s.ready.Store(s.st.len() == 0)
		return
	}
	var out []uint32
	for _, slot := range dirty {
		if s.g.has(slot) {
			out = append(out, slot)
		}
	}
	s.relink(out, dirty)
	s.changed = len(dirty)
	s.ready.Store(true)
}

// removeTemps removes what a write that a crash cut short left behind.
func removeTemps(dir string) {
	for _, name := range []string{logName, graphName} {
		tmps, _ := filepath.Glob(filepath.Join(dir, name+".tmp*"))
		for _, tmp := range tmps {
			os.Remove(tmp)
		}
	}
}

// reset starts an empty vectors file, of this Set's tag and dims.
func (s *Set) reset() error {
	if err := s.rewrite(nil); err != nil {
		return err
	}
	if err := os.Remove(s.path(graphName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.ready.Store(true) // an empty graph holds every vector
	return nil
}

// rewrite writes a new vectors file holding the given slots' vectors, in
// that order, and switches to it.
func (s *Set) rewrite(slots []uint32) error {
	gen := newGen()
	header := encodeHeader(s.dims, s.tag, gen)
	size, chain := int64(len(header)), uint32(0)
	path := s.path(logName)
	err := writeFileSync(path, func(w io.Writer) error {
		if _, err := w.Write(header); err != nil {
			return err
		}
		for lo := 0; lo < len(slots); lo += 1000 {
			cs := make([]change, 0, 1000)
			for _, slot := range slots[lo:min(lo+1000, len(slots))] {
				cs = append(cs, change{op: opPut, id: s.st.ids[slot], sum: s.st.sums[slot], scale: s.st.scales[slot], code: s.st.code(slot)})
			}
			rec := encodeRecord(opPut, cs, s.dims)
			if _, err := w.Write(rec); err != nil {
				return err
			}
			size += int64(len(rec))
			chain = chainRecord(chain, rec)
		}
		return nil
	})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.gen, s.size, s.chain = f, gen, size, chain
	return nil
}

// compact writes the live vectors to a new file, renumbers the slots to
// its order (as a replay of it would), and writes the graph file.
func (s *Set) compact() error {
	var live []uint32
	for slot := range s.st.cap() {
		if s.st.live(uint32(slot)) {
			live = append(live, uint32(slot))
		}
	}
	if err := s.rewrite(live); err != nil {
		return fmt.Errorf("vector: compact: %w", err)
	}
	s.mu.Lock()
	s.renumber(live)
	s.mu.Unlock()
	return s.saveGraph()
}

// renumber moves slot live[i] to slot i, in the store and the graph.
func (s *Set) renumber(live []uint32) {
	old, st := s.st, newStore(s.dims)
	to := make([]uint32, old.cap())
	for i, slot := range live {
		to[slot] = uint32(i)
		st.put(old.ids[slot], old.sums[slot], old.scales[slot], old.code(slot))
	}
	links := make([][][]uint32, len(live))
	for i, slot := range live {
		links[i] = s.g.links[slot]
		for _, ls := range links[i] {
			for j, o := range ls {
				ls[j] = to[o]
			}
		}
	}
	s.g.st, s.g.links = st, links
	if s.g.top >= 0 {
		s.g.entry = to[s.g.entry]
	}
	s.st = st
}

func chainRecord(chain uint32, rec []byte) uint32 {
	return crc32.Update(chain, castagnoli, rec[4:8])
}

// The graph file holds the links of the graph over the slots that a
// replay of the vectors file up to an offset gives:
//
//	"memmesh graph 1\n" | u64 generation | u64 offset | u32 chain |
//	u32 slots | u32 entry | i32 top | per slot: u8 layers, per layer
//	u8 count and count u32 slots | u32 CRC-32C of all before
const graphMagic = "memmesh graph 1\n"

type savedGraph struct {
	gen    uint64
	offset int64
	chain  uint32
	slots  int
	entry  uint32
	top    int
	body   []byte
}

// saveGraph writes the graph file for the vectors file as it is, once
// the graph holds every vector: a partial one would not fit.
func (s *Set) saveGraph() error {
	if !s.ready.Load() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	err := writeFileSync(s.path(graphName), func(w io.Writer) error {
		b := []byte(graphMagic)
		b = binary.LittleEndian.AppendUint64(b, s.gen)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.size))
		b = binary.LittleEndian.AppendUint32(b, s.chain)
		b = binary.LittleEndian.AppendUint32(b, uint32(s.st.cap()))
		b = binary.LittleEndian.AppendUint32(b, s.g.entry)
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(s.g.top)))
		crc := crc32.Update(0, castagnoli, b)
		for slot := range s.st.cap() {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
			var layers [][]uint32
			if slot < len(s.g.links) {
				layers = s.g.links[slot]
			}
			b = append(b, byte(len(layers)))
			for _, ls := range layers {
				b = append(b, byte(len(ls)))
				for _, o := range ls {
					b = binary.LittleEndian.AppendUint32(b, o)
				}
			}
			crc = crc32.Update(crc, castagnoli, b)
		}
		b = binary.LittleEndian.AppendUint32(b, crc)
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("vector: save graph: %w", err)
	}
	s.changed = 0
	return nil
}

// readGraphFile returns the graph file's header and body, or nil when
// there is none or it fails its CRC.
func readGraphFile(path string, log interface{ Warn(string, ...any) }) *savedGraph {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	head := len(graphMagic) + 8 + 8 + 4 + 4 + 4 + 4
	if err != nil || len(b) < head+4 || string(b[:len(graphMagic)]) != graphMagic ||
		crc32.Checksum(b[:len(b)-4], castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		log.Warn("graph file unreadable, rebuilding the graph", "err", err)
		return nil
	}
	h := b[len(graphMagic):]
	return &savedGraph{
		gen:    binary.LittleEndian.Uint64(h),
		offset: int64(binary.LittleEndian.Uint64(h[8:])),
		chain:  binary.LittleEndian.Uint32(h[16:]),
		slots:  int(binary.LittleEndian.Uint32(h[20:])),
		entry:  binary.LittleEndian.Uint32(h[24:]),
		top:    int(int32(binary.LittleEndian.Uint32(h[28:]))),
		body:   b[head : len(b)-4],
	}
}

// install puts the saved links into g, whose store holds what the
// vectors file held at the saved offset, with capThen slots, but for the
// dirty slots, changed since. Every count and slot is checked, so that a
// graph file that does not fit is refused whole.
func (sg *savedGraph) install(g *graph, capThen int, dirty []uint32) error {
	if sg.slots != capThen {
		return fmt.Errorf("%w: graph of %d slots, vectors of %d", errCorrupt, sg.slots, capThen)
	}
	isDirty := make(map[uint32]bool, len(dirty))
	for _, d := range dirty {
		isDirty[d] = true
	}
	links := make([][][]uint32, sg.slots)
	p := sg.body
	for slot := range sg.slots {
		if len(p) < 1 || int(p[0]) > maxLayer+1 {
			return fmt.Errorf("%w: graph slot %d", errCorrupt, slot)
		}
		n := int(p[0])
		p = p[1:]
		if !isDirty[uint32(slot)] && (n > 0) != g.st.live(uint32(slot)) {
			return fmt.Errorf("%w: graph slot %d live %v", errCorrupt, slot, n > 0)
		}
		if n == 0 {
			continue
		}
		links[slot] = make([][]uint32, n)
		for l := range n {
			if len(p) < 1 || int(p[0]) > g.maxLinks(l) || len(p) < 1+4*int(p[0]) {
				return fmt.Errorf("%w: graph slot %d layer %d", errCorrupt, slot, l)
			}
			ls := make([]uint32, p[0])
			for i := range ls {
				ls[i] = binary.LittleEndian.Uint32(p[1+4*i:])
			}
			links[slot][l] = ls
			p = p[1+4*len(ls):]
		}
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d bytes after the graph", errCorrupt, len(p))
	}
	if err := checkLinks(links, sg.entry, sg.top); err != nil {
		return err
	}
	g.links, g.entry, g.top = links, sg.entry, sg.top
	return nil
}

// checkLinks holds every link to point to another slot that has the
// layer, and the entry to be a slot of the top layer, the highest.
func checkLinks(links [][][]uint32, entry uint32, top int) error {
	highest := -1
	for slot, layers := range links {
		highest = max(highest, len(layers)-1)
		for l, ls := range layers {
			for _, o := range ls {
				if int(o) >= len(links) || o == uint32(slot) || len(links[o]) <= l {
					return fmt.Errorf("%w: graph slot %d links to %d on layer %d", errCorrupt, slot, o, l)
				}
			}
		}
	}
	if highest != top || (top >= 0 && (int(entry) >= len(links) || len(links[entry])-1 != top)) {
		return fmt.Errorf("%w: graph entry %d on layer %d", errCorrupt, entry, top)
	}
	return nil
}
