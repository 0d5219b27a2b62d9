// pyroingest: a test receiver of Pyroscope's ingest API (POST /ingest), for
// tests/integration/test_pyroscope.sh. The Pyroscope server itself cannot be
// used here (docs/fleet.md says why), so this one takes the request as
// Pyroscope's server code does and holds it to its rules:
//
//   - The body, by pkg/ingester/pyroscope/ingest_handler.go's
//     readInputRawDataFromRequest: format=pprof takes the whole body as one
//     raw pprof profile, before the Content-Type is looked at; only without
//     a format is a multipart/form-data body read as a form. So format=pprof
//     with a multipart body is parsed as a profile and fails: the real server
//     answers 422 "parsing IngestInput-pprof failed: ... wrong wireType = 5
//     for field Function" (the body's first bytes, "--", are field 5 of
//     pprof's Profile with wire type 5), and so does this one.
//   - The form, by pkg/og/convert/pprof/profile.go's loadPprofFromForm: the
//     fields "profile" (the pprof, gzipped or not), "prev_profile" and
//     "sample_type_config" (JSON of objects with units, aggregation,
//     sampled), each optional; a form without a profile is taken with
//     nothing to store ("Zero profile, nothing to parse").
//   - The query, by the handler's parseInputMetadataFromRequest: the name's
//     key syntax as Pyroscope's labelset.Parse (segment.ParseKey and
//     flameql) validates it (the application name's and label keys'
//     characters, no empty value), refused 400; from and until, Unix
//     seconds, the time of the request when absent.
//
// The profile is checked as the real parser reads a Profile message: each
// field's wire type (profile.proto), lengths inside the body. Other formats
// (folded lines, trie, tree, jfr, speedscope) are not taken here: answered
// 400. What passes is kept for the test to read with a real pprof reader:
// DIR/req-N.pb.gz and DIR/req-N.json (the parsed name, the times, the
// format, the headers).
//
// -token T answers 401 ("invalid token") to a request whose Authorization
// is not "Bearer T".
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

type request struct {
	App        string            `json:"app"`
	Labels     map[string]string `json:"labels"`
	From       int64             `json:"from"`
	Until      int64             `json:"until"`
	SampleRate string            `json:"sample_rate"`
	Spy        string            `json:"spy"`
	Format     string            `json:"format"`
	Config     map[string]struct {
		Units       string `json:"units"`
		Aggregation string `json:"aggregation"`
		Sampled     bool   `json:"sampled"`
	} `json:"sample_type_config"`
	Authorization string `json:"authorization"`
	OrgID         string `json:"x_scope_orgid"`
	Bytes         int    `json:"profile_bytes"`
}

func appRune(r rune) bool {
	return r == '-' || r == '/' || keyRune(r)
}

func keyRune(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' || r == '.'
}

// parseName: "app{k=v,...}" by Pyroscope's rules; a value ends at ',' or '}'.
func parseName(s string) (string, map[string]string, error) {
	open := strings.IndexByte(s, '{')
	if open < 0 || !strings.HasSuffix(s, "}") {
		return "", nil, fmt.Errorf("name %q: not app{labels}", s)
	}
	app := strings.TrimSpace(s[:open])
	if app == "" {
		return "", nil, fmt.Errorf("application name is required")
	}
	for _, r := range app {
		if !appRune(r) {
			return "", nil, fmt.Errorf("app name %q: invalid character %q", app, r)
		}
	}
	labels := map[string]string{}
	body := s[open+1 : len(s)-1]
	if body == "" {
		return app, labels, nil
	}
	for _, kv := range strings.Split(body, ",") {
		eq := strings.IndexByte(kv, '=')
		if eq < 0 {
			return "", nil, fmt.Errorf("label %q: no '='", kv)
		}
		k, v := strings.TrimSpace(kv[:eq]), strings.TrimSpace(kv[eq+1:])
		if k == "" || k == "__name__" {
			return "", nil, fmt.Errorf("label key %q: required, not reserved", k)
		}
		for _, r := range k {
			if !keyRune(r) {
				return "", nil, fmt.Errorf("label key %q: invalid character %q", k, r)
			}
		}
		if strings.ContainsAny(v, "{}") || v == "" {
			return "", nil, fmt.Errorf("label %s: value %q", k, v)
		}
		if _, dup := labels[k]; dup {
			return "", nil, fmt.Errorf("label %s twice", k)
		}
		labels[k] = v
	}
	return app, labels, nil
}

// profileFields: pprof's Profile message (profile.proto), by field number:
// the name its generated Go code gives the field, as the decoder's errors
// name it, and its wire type (Comment, repeated int64, may also be packed).
var profileFields = map[uint64]struct {
	name string
	wire uint64
}{
	1: {"SampleType", 2}, 2: {"Sample", 2}, 3: {"Mapping", 2}, 4: {"Location", 2},
	5: {"Function", 2}, 6: {"StringTable", 2}, 7: {"DropFrames", 0}, 8: {"KeepFrames", 0},
	9: {"TimeNanos", 0}, 10: {"DurationNanos", 0}, 11: {"PeriodType", 2}, 12: {"Period", 0},
	13: {"Comment", 0}, 14: {"DefaultSampleType", 0},
}

// checkProfile reads b (gunzipped first when it is gzip) as a Profile
// message, field by field, as a protobuf decoder does: nil, or the
// decoder's error.
func checkProfile(b []byte) error {
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		if b, err = io.ReadAll(zr); err != nil {
			return err
		}
	}
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("proto: Profile: illegal tag")
		}
		b = b[n:]
		field, wire := key>>3, key&7
		if field == 0 {
			return fmt.Errorf("proto: Profile: illegal tag 0 (wire type %d)", wire)
		}
		if f, ok := profileFields[field]; ok && wire != f.wire && !(field == 13 && wire == 2) {
			return fmt.Errorf("proto: wrong wireType = %d for field %s", wire, f.name)
		}
		skip := 0
		switch wire {
		case 0:
			if _, n = binary.Uvarint(b); n <= 0 {
				return io.ErrUnexpectedEOF
			}
			skip = n
		case 1:
			skip = 8
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return io.ErrUnexpectedEOF
			}
			skip = n + int(l)
		case 5:
			skip = 4
		default:
			return fmt.Errorf("proto: illegal wireType %d", wire)
		}
		if skip > len(b) {
			return io.ErrUnexpectedEOF
		}
		b = b[skip:]
	}
	return nil
}

// unixOr: a Unix time of the query, or now when absent.
func unixOr(q string) (int64, error) {
	if q == "" {
		return time.Now().Unix(), nil
	}
	return strconv.ParseInt(q, 10, 64)
}

func ingest(r *http.Request, dir string, n int) (int, bool, error) {
	q := r.URL.Query()
	if r.Method != http.MethodPost || r.URL.Path != "/ingest" {
		return 404, false, fmt.Errorf("not POST /ingest: %s %s", r.Method, r.URL.Path)
	}
	var req request
	var err error
	if req.App, req.Labels, err = parseName(q.Get("name")); err != nil {
		return 400, false, fmt.Errorf("name: %v", err)
	}
	if req.From, err = unixOr(q.Get("from")); err != nil {
		return 400, false, fmt.Errorf("from: %v", err)
	}
	if req.Until, err = unixOr(q.Get("until")); err != nil || req.Until <= req.From {
		return 400, false, fmt.Errorf("until %q not after from", q.Get("until"))
	}
	req.SampleRate, req.Spy, req.Format = q.Get("sampleRate"), q.Get("spyName"), q.Get("format")
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return 408, false, err
	}
	ctype := r.Header.Get("Content-Type")
	var prof, cfg []byte
	// In ingest_handler.go's order: format=pprof first, whatever the
	// Content-Type; a form only without a format.
	switch {
	case req.Format == "pprof":
		prof = body
	case req.Format == "" && strings.Contains(ctype, "multipart/form-data"):
		_, params, err := mime.ParseMediaType(ctype)
		if err != nil {
			return 422, false, fmt.Errorf("parsing IngestInput-pprof failed: %v", err)
		}
		form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(32 << 20)
		if err != nil {
			return 422, false, fmt.Errorf("parsing IngestInput-pprof failed: %v", err)
		}
		defer form.RemoveAll()
		field := func(name string) ([]byte, error) {
			fh := form.File[name]
			if len(fh) == 0 {
				return nil, nil
			}
			f, err := fh[0].Open()
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return io.ReadAll(f)
		}
		if prof, err = field("profile"); err == nil {
			cfg, err = field("sample_type_config")
		}
		if err != nil {
			return 422, false, fmt.Errorf("parsing IngestInput-pprof failed: %v", err)
		}
		if cfg != nil {
			if err := json.Unmarshal(cfg, &req.Config); err != nil {
				return 422, false, fmt.Errorf("parsing IngestInput-pprof failed: sample_type_config: %v", err)
			}
		}
		if len(prof) == 0 {
			return 200, false, nil // the real server's "Zero profile, nothing to parse"
		}
	default:
		return 400, false, fmt.Errorf("format %q, content type %q: this stand-in takes pprof only (format=pprof and a raw body, or no format and a multipart form)", req.Format, ctype)
	}
	if err := checkProfile(prof); err != nil {
		return 422, false, fmt.Errorf("parsing IngestInput-pprof failed: %v", err)
	}
	req.Authorization = r.Header.Get("Authorization")
	req.OrgID = r.Header.Get("X-Scope-OrgID")
	req.Bytes = len(prof)
	base := filepath.Join(dir, fmt.Sprintf("req-%d", n))
	js, _ := json.Marshal(&req)
	if err := os.WriteFile(base+".pb.gz", prof, 0o644); err != nil {
		return 500, false, err
	}
	return 200, true, os.WriteFile(base+".json", js, 0o644)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen")
	dir := flag.String("dir", ".", "where to keep what was received")
	token := flag.String("token", "", "answer 401 unless Authorization is Bearer TOKEN")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	count := 0
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if *token != "" && r.Header.Get("Authorization") != "Bearer "+*token {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		code, kept, err := ingest(r, *dir, count)
		if err != nil {
			log.Printf("refused: %v", err)
			http.Error(w, err.Error(), code)
			return
		}
		if kept {
			count++
		}
		w.WriteHeader(http.StatusOK)
	})
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	log.Fatal(http.Serve(ln, nil))
}
