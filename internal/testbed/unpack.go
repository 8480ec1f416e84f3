package testbed

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// verifySHA512 checks that the file at path has the given hex SHA-512.
// A mismatch wraps ErrChecksum.
func verifySHA512(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("testbed: verify: %w", err)
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("testbed: verify %s: %w", path, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return fmt.Errorf("%w: %s: sha512 %s, want %s", ErrChecksum, filepath.Base(path), got, want)
	}
	return nil
}

// unpackTarGz extracts the gzip'd tar archive at src into dst, dropping the
// first strip path components of every entry, keeping permission bits and
// modification times. Entries that would land outside dst are rejected.
func unpackTarGz(ctx context.Context, src, dst string, strip int) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("testbed: unpack: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("testbed: unpack %s: %w", src, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("testbed: unpack %s: %w", src, err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("testbed: unpack %s: %w", src, err)
		}
		if err := unpackEntry(tr, hdr, dst, strip); err != nil {
			return fmt.Errorf("testbed: unpack %s: %s: %w", src, hdr.Name, err)
		}
	}
}

func unpackEntry(tr *tar.Reader, hdr *tar.Header, dst string, strip int) error {
	parts := strings.Split(strings.Trim(filepath.ToSlash(hdr.Name), "/"), "/")
	if len(parts) <= strip {
		return nil // the stripped top-level directory itself
	}
	rel := filepath.Join(parts[strip:]...)
	if !filepath.IsLocal(rel) {
		return errors.New("path escapes the destination")
	}
	target := filepath.Join(dst, rel)
	mode := hdr.FileInfo().Mode().Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, mode|0o700); err != nil {
			return err
		}
	case tar.TypeReg:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, tr); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		// OpenFile's mode is filtered by the umask; restore it exactly.
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
	case tar.TypeSymlink:
		link := filepath.Join(filepath.Dir(rel), hdr.Linkname)
		if filepath.IsAbs(hdr.Linkname) || !filepath.IsLocal(link) {
			return errors.New("symlink escapes the destination")
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return err
		}
		return nil
	default:
		return nil // hard links, devices, fifos: the distribution has none
	}
	return os.Chtimes(target, hdr.ModTime, hdr.ModTime)
}
