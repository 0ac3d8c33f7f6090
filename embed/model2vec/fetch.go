package model2vec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Files are the files of a model's folder, as Load reads them.
var Files = []string{configFile, tokenizerFile, tensorFile}

// maxTensorBytes bounds a downloaded model.safetensors (the largest
// static models are a few hundred MB).
const maxTensorBytes = 4 << 30

// ErrChecksum marks a downloaded file whose sha256 is not the one asked
// for: it is deleted.
var ErrChecksum = errors.New("model2vec: checksum mismatch")

// Fetch downloads the files of a model from base, the URL of the folder
// holding them (such as
// https://huggingface.co/minishlab/potion-base-8M/resolve/main), into
// dir. A file is written under a partial name first: a call after an
// interrupted one resumes it where it stopped (an HTTP range request),
// and it takes its name once whole and, when sums names it, its sha256
// matched (hex). progress, when set, is told of each file's bytes as
// they arrive (total 0 when the server does not say). Every file is
// bounded by the size its kind may have, whatever the server announces.
func Fetch(ctx context.Context, client *http.Client, base, dir string, sums map[string]string, progress func(file string, done, total int64)) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("model2vec: fetch: %q is no http or https URL", base)
	}
	for name := range sums {
		if !slices.Contains(Files, name) {
			return fmt.Errorf("model2vec: fetch: a checksum for %q, which is no file of a model (%s)", name, strings.Join(Files, ", "))
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range Files {
		if err := fetchFile(ctx, client, strings.TrimSuffix(base, "/")+"/"+name, dir, name, sums[name], progress); err != nil {
			return err
		}
	}
	return nil
}

// limit is the most bytes a file of a model may have.
func limit(name string) int64 {
	switch name {
	case configFile:
		return maxConfigBytes
	case tokenizerFile:
		return maxTokenizerBytes
	}
	return maxTensorBytes
}

func fetchFile(ctx context.Context, client *http.Client, from, dir, name, sum string, progress func(string, int64, int64)) error {
	final := filepath.Join(dir, name)
	if _, err := os.Stat(final); err == nil {
		return checkSum(final, name, sum)
	}
	part := final + ".part"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, from, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("model2vec: fetch %s: %w", name, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		// The server sends it whole (or the part is not of this file):
		// start again.
		if err := f.Truncate(0); err != nil {
			return err
		}
		if have, err = f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("model2vec: fetch %s: %s; try again", name, resp.Status)
		}
	default:
		return fmt.Errorf("model2vec: fetch %s: %s", name, resp.Status)
	}
	total := int64(0)
	if resp.ContentLength > 0 {
		total = have + resp.ContentLength
	}
	max := limit(name)
	w := &counter{w: f, done: have, total: total, name: name, progress: progress}
	if _, err := io.Copy(w, io.LimitReader(resp.Body, max-have+1)); err != nil {
		return fmt.Errorf("model2vec: fetch %s: %w (run again to resume)", name, err)
	}
	if w.done > max {
		os.Remove(part)
		return fmt.Errorf("%w: %s: more than %d bytes", ErrModel, name, max)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := checkSum(part, name, sum); err != nil {
		os.Remove(part)
		return err
	}
	return os.Rename(part, final)
}

// checkSum checks the sha256 of the file at path, the model's file name,
// against sum (hex); an empty sum checks nothing.
func checkSum(path, name, sum string) error {
	if sum == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, sum) {
		return fmt.Errorf("%w: %s has sha256 %s, want %s", ErrChecksum, name, got, strings.ToLower(sum))
	}
	return nil
}

// counter writes to w and tells progress of the bytes written.
type counter struct {
	w           io.Writer
	done, total int64
	name        string
	progress    func(string, int64, int64)
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.done += int64(n)
	if c.progress != nil {
		c.progress(c.name, c.done, c.total)
	}
	return n, err
}
