package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// lineParser reads one complete line of a line format (without its line
// break) into r: turns, metadata, warnings.
type lineParser func(r *reading, line []byte)

// readLines reads the line format at path from cur, one complete line at
// a time. A line still being written (no line break yet) is left for the
// next read; a line over the limit is skipped as it streams past, never
// held whole. The read stops at the file's size when it started, or at
// the limits on turns and bytes.
func readLines(client, path string, cur Cursor, lim Limits, parse lineParser) (Batch, error) {
	return readFile(client, path, cur, lim, func(r *reading, f *os.File, fi os.FileInfo) error {
		same, err := continues(f, fi, r.cur)
		if err != nil {
			return err
		}
		if !same {
			r.restart()
		}
		if err := r.lines(f, fi.Size(), parse); err != nil {
			return err
		}
		r.flush()
		id, err := identify(f, fi, 0)
		if err != nil {
			return err
		}
		if r.batch.More {
			// The file is not read to its end: the next read must not
			// take it for unchanged.
			id.ModTime = time.Time{}
		}
		r.cur.File = id
		return nil
	})
}

// readFile opens the transcript at path and, unless it is as the cursor
// saw it last, reads it with read.
func readFile(client, path string, cur Cursor, lim Limits, read func(r *reading, f *os.File, fi os.FileInfo) error) (Batch, error) {
	r := newReading(client, path, cur, lim)
	f, err := os.Open(path)
	if err != nil {
		return Batch{}, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Batch{}, fmt.Errorf("transcript: %w", err)
	}
	if !r.cur.File.unchanged(fi) {
		if err := read(r, f, fi); err != nil {
			return Batch{}, err
		}
	}
	return r.finish(), nil
}

// lines reads the lines of f from the cursor's offset up to size.
func (r *reading) lines(f *os.File, size int64, parse lineParser) error {
	start := r.cur.Offset
	// Large reads cost far less per byte than small ones (system calls);
	// a read of a few new lines needs no large buffer.
	br := bufio.NewReaderSize(io.NewSectionReader(f, start, size-start), int(min(max(size-start, 4<<10), 1<<20)))
	var long []byte // a line longer than the reader's buffer, gathered
	for {
		if r.full() || r.cur.Offset-start >= r.lim.Bytes {
			r.batch.More = r.cur.Offset < size
			return nil
		}
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			r.longChunk(&long, chunk)
			continue
		case errors.Is(err, io.EOF):
			if r.cur.Skipping {
				r.cur.Offset += int64(len(chunk))
			}
			// Otherwise the line is still being written: it is read
			// again, whole, next time.
			return nil
		case err != nil:
			return fmt.Errorf("transcript: read %s: %w", r.path, err)
		}
		r.line = r.cur.Line + 1
		if r.cur.Skipping {
			r.cur.Offset += int64(len(chunk))
			r.cur.Line++
			r.cur.Skipping = false
			continue
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		r.cur.Offset += int64(len(line))
		r.cur.Line++
		if len(line)-1 > r.lim.Line {
			r.warn("line of %d bytes, over the limit of %d: skipped", len(line)-1, r.lim.Line)
		} else if line = bytes.TrimRight(line, "\r\n"); len(bytes.TrimSpace(line)) > 0 {
			parse(r, line)
		}
		long = long[:0]
	}
}

// longChunk takes a piece of a line longer than the reader's buffer: it
// is gathered while the line is within the limit, and from the moment it
// is over, the line is skipped as it streams past.
func (r *reading) longChunk(long *[]byte, chunk []byte) {
	if r.cur.Skipping {
		r.cur.Offset += int64(len(chunk))
		return
	}
	if n := len(*long) + len(chunk); n <= r.lim.Line {
		// Doubling, up to the limit: a long line costs at most twice
		// the limit in allocations.
		if n > cap(*long) {
			*long = slices.Grow(*long, min(max(2*cap(*long), n), r.lim.Line)-len(*long))
		}
		*long = append(*long, chunk...)
		return
	}
	r.line = r.cur.Line + 1
	r.warn("line over the limit of %d bytes: skipped", r.lim.Line)
	r.cur.Offset += int64(len(*long) + len(chunk))
	r.cur.Skipping = true
	*long = (*long)[:0]
}
