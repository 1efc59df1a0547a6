package blob

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	gcblob "gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // registers file://
	_ "gocloud.dev/blob/memblob"  // registers mem://
	_ "gocloud.dev/blob/s3blob"   // registers s3://
	"gocloud.dev/gcerrors"
)

const (
	// tokenBytes is the number of random bytes in a name.
	tokenBytes = 32
	// tokenLen is the length of tokenBytes encoded as unpadded base64url.
	tokenLen = 43

	// attrsExt is the suffix fileblob uses for its metadata sidecar files.
	attrsExt = ".attrs"
)

var (
	// ErrInvalidName is returned by Delete for a name that Put could not have
	// produced.
	ErrInvalidName = errors.New("blob: invalid name")
	// ErrInvalidExt is returned by Put for an extension that is not 1 to 10
	// characters of [a-z0-9] (after lowercasing).
	ErrInvalidExt = errors.New("blob: invalid extension")
	// ErrInvalidContentType is returned by Put for an empty or unparseable
	// content type.
	ErrInvalidContentType = errors.New("blob: invalid content type")
)

var (
	extRE  = regexp.MustCompile(`^[a-z0-9]{1,10}$`)
	nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}\.[a-z0-9]{1,10}$`)
)

// Store holds media objects under unguessable names in a gocloud.dev bucket.
// It is safe for concurrent use.
type Store struct {
	bucket *gcblob.Bucket
	// dir is the local directory of a file:// store, "" otherwise. It is used
	// to fsync new objects, which fileblob does not do itself.
	dir string
}

// Open opens the bucket at rawURL. Supported schemes:
//
//   - file:///abs/path — a local directory, created (mode 0700) if missing.
//     Temporary files are kept in that directory (fileblob's no_tmp_dir) so
//     that the final rename is atomic and never crosses filesystems. The
//     fileblob "metadata=skip" option is refused: it would lose content types.
//   - s3://bucket?region=... — see gocloud.dev/blob/s3blob for parameters.
//   - mem:// — in memory, for tests.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	u, _ := url.Parse(rawURL)
	var dir string
	if u.Scheme == "file" {
		q := u.Query()
		dir = filepath.Clean(filepath.FromSlash(u.Path))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("blob: create store directory: %w", err)
		}
		if q.Get("no_tmp_dir") == "" {
			q.Set("no_tmp_dir", "1")
		}
		u.RawQuery = q.Encode()
		rawURL = u.String()
	}
	b, err := gcblob.OpenBucket(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob: open bucket: %w", err)
	}
	return &Store{bucket: b, dir: dir}, nil
}

// CheckURL reports what is wrong with a store URL, without opening anything:
// a configuration mistake, as opposed to a store that fails to open.
func CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("blob: parse store URL: %w", err)
	}
	if !gcblob.DefaultURLMux().ValidBucketScheme(u.Scheme) {
		return fmt.Errorf("blob: store URL %q: want file:///absolute/path or s3://bucket?region=…", rawURL)
	}
	if u.Scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return fmt.Errorf("blob: file store URL must be file:///absolute/path, got host %q", u.Host)
		}
		if u.Path == "" || !filepath.IsAbs(filepath.FromSlash(u.Path)) {
			return errors.New("blob: file store URL must be file:///absolute/path")
		}
		if v, ok := u.Query()["metadata"]; ok && len(v) > 0 && v[0] == "skip" {
			return errors.New("blob: file store URL must not set metadata=skip (content types would be lost)")
		}
	}
	if u.Scheme == "s3" && u.Host == "" {
		return fmt.Errorf("blob: store URL %q names no bucket", rawURL)
	}
	return nil
}

// Close releases the bucket.
func (s *Store) Close() error {
	return s.bucket.Close()
}

// ValidName reports whether name has exactly the form Put produces: 43
// characters of unpadded base64url encoding 32 bytes (canonically, with zero
// trailing bits), a dot, and 1 to 10 characters of [a-z0-9].
func ValidName(name string) bool {
	// No name Put makes ends in the file store's sidecar suffix.
	if !nameRE.MatchString(name) || strings.HasSuffix(name, attrsExt) {
		return false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(name[:tokenLen])
	return err == nil && len(raw) == tokenBytes
}

// Put stores data under a new unguessable name and returns the name, which is
// a secret. ext is lowercased and must then match ^[a-z0-9]{1,10}$ (no leading
// dot); contentType must be a valid media type and is stored as the object's
// Content-Type, served back by Handler. Put returns only once the object is
// completely written (the bucket writer's Close succeeded; for file:// stores
// also fsynced).
func (s *Store) Put(ctx context.Context, data []byte, contentType, ext string) (string, error) {
	ext = strings.ToLower(ext)
	if !extRE.MatchString(ext) || "."+ext == attrsExt {
		return "", ErrInvalidExt
	}
	if contentType == "" {
		return "", ErrInvalidContentType
	}
	if _, _, err := mime.ParseMediaType(contentType); err != nil {
		return "", ErrInvalidContentType
	}

	var raw [tokenBytes]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never returns an error (Go 1.24+).
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	name := token + "." + ext

	if err := s.write(ctx, name, data, contentType); err != nil {
		return "", redact(fmt.Errorf("blob: put: %w", err), token)
	}
	if s.dir != "" {
		if err := s.syncFile(name); err != nil {
			// Best effort: do not leave an object behind whose name the
			// caller never learns.
			_ = s.bucket.Delete(context.WithoutCancel(ctx), name)
			return "", redact(fmt.Errorf("blob: put: sync: %w", err), token)
		}
	}
	return name, nil
}

func (s *Store) write(ctx context.Context, name string, data []byte, contentType string) error {
	// Cancelling the writer's context before Close aborts the write, so a
	// failed Write never leaves a partial object behind.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(wctx, name, &gcblob.WriterOptions{
		ContentType:                 contentType,
		DisableContentTypeDetection: true,
	})
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		cancel()
		_ = w.Close()
		return err
	}
	return w.Close()
}

// syncFile fsyncs a just-written object of a file:// store, its metadata
// sidecar and the directory holding both, because fileblob renames its
// temporary file into place without syncing anything. Names are flat and use
// only characters fileblob does not escape, so the object is at dir/name.
func (s *Store) syncFile(name string) error {
	path := filepath.Join(s.dir, name)
	if err := syncPath(path); err != nil {
		return err
	}
	if err := syncPath(path + attrsExt); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncPath(s.dir)
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Delete removes the named object. Deleting an object that does not exist is
// not an error, so Delete can be used freely to clean up after a failed send.
// A name Put could not have produced returns ErrInvalidName.
func (s *Store) Delete(ctx context.Context, name string) error {
	if !ValidName(name) {
		return ErrInvalidName
	}
	err := s.bucket.Delete(ctx, name)
	if err == nil || gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return redact(fmt.Errorf("blob: delete: %w", err), name[:tokenLen])
}

// URL joins the public base URL of the handler's mount point (for example
// "https://sb.example.com/media/"; the trailing slash is optional) and name.
func (s *Store) URL(base, name string) string {
	return strings.TrimRight(base, "/") + "/" + url.PathEscape(name)
}

// NameFromURL is the inverse of URL: it returns the name in rawURL if rawURL
// is base followed by a valid name, for checking that a URL supplied by a
// client refers to media hosted here.
func NameFromURL(base, rawURL string) (string, bool) {
	prefix := strings.TrimRight(base, "/") + "/"
	name, ok := strings.CutPrefix(rawURL, prefix)
	if !ok || !ValidName(name) {
		return "", false
	}
	return name, true
}

// redactedError hides a secret name inside an error message while keeping the
// original error reachable through errors.Is/As (and so gcerrors.Code).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redact(err error, secret string) error {
	return &redactedError{msg: strings.ReplaceAll(err.Error(), secret, "[redacted]"), err: err}
}

// ErrNotExist is returned by Get for a well-formed name with no object.
var ErrNotExist = errors.New("blob: no such object")

// Object is a stored object opened for reading. It seeks (a seek reopens a
// range reader lazily), so byte ranges are served without reading it whole.
type Object struct {
	io.ReadSeekCloser
	ContentType string
	ModTime     time.Time
	Size        int64
}

// Get opens the named object for reading; the caller closes it.
func (s *Store) Get(ctx context.Context, name string) (*Object, error) {
	if !ValidName(name) {
		return nil, ErrInvalidName
	}
	rd, err := s.bucket.NewReader(ctx, name, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, ErrNotExist
		}
		return nil, redact(err, name)
	}
	return &Object{ReadSeekCloser: rd, ContentType: rd.ContentType(), ModTime: rd.ModTime(), Size: rd.Size()}, nil
}
