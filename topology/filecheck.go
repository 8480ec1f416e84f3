package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxTokenFile bounds how much of a token file Validate reads to check that
// it holds a token. Real tokens are a few KiB.
const maxTokenFile = 64 << 10

// checkFile reports why path cannot serve as a TLS or token file, or ""
// when it can. It refuses anything but a regular file (so a path such as
// /dev/stdin or a FIFO cannot block Validate), and a file with no content.
// For token files (token true) content means a non-blank first 64 KiB.
//
// The reason names the path and the OS error, never the file's contents.
func checkFile(path string, token bool) string {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Sprintf("%q: %v", path, pathCause(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Sprintf("%q is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("%q: %v", path, pathCause(err))
	}
	defer f.Close()
	limit := int64(1)
	if token {
		limit = maxTokenFile
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return fmt.Sprintf("%q: %v", path, pathCause(err))
	}
	// pulsar-client-go trims spaces and newlines from token files.
	if token && len(bytes.Trim(b, " \t\r\n")) == 0 || len(b) == 0 {
		return fmt.Sprintf("%q is empty", path)
	}
	return ""
}

// pathCause drops the path and operation from an *fs.PathError, which the
// caller already names.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
