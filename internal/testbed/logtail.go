package testbed

import (
	"bytes"
	"io"
	"os"
	"strings"
)

// tailBytes is how much of a log file LogTail reads from its end.
const tailBytes = 256 << 10

// tail returns the last n lines of b as one string.
func tail(b []byte, n int) string {
	return strings.Join(tailLines(b, n), "\n")
}

// tailLines returns the last n non-empty-trailing lines of b, oldest first.
func tailLines(b []byte, n int) []string {
	if n <= 0 {
		return nil
	}
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// fileTail returns the last n lines of the file at path, reading at most
// tailBytes from its end. A missing file has no lines.
func fileTail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := st.Size() - tailBytes
	if off < 0 {
		off = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil
	}
	if off > 0 {
		// Drop the partial first line.
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return tailLines(b, n)
}
