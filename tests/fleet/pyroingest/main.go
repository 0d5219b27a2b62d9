// pyroingest: a test receiver of Pyroscope's ingest API (POST /ingest), for
// tests/integration/test_pyroscope.sh. The Pyroscope server itself cannot be
// used here (docs/fleet.md says why), so this one takes the request as
// Pyroscope's documented /ingest does and holds it to Pyroscope's rules: the
// query (name, from, until, format=pprof), the name's key syntax as
// Pyroscope's segment.ParseKey and flameql validate it (the application name
// and label keys' characters, no empty value), a multipart form with a
// "profile" part (gzipped pprof) and a "sample_type_config" part (JSON of
// objects with units, aggregation, sampled). What passes is kept for the
// test to read with a real pprof reader: DIR/req-N.pb.gz and DIR/req-N.json
// (the parsed name, the times, the headers); what does not is answered 400
// with the reason, as the server would refuse it.
//
// -token T answers 401 ("invalid token") to a request whose Authorization
// is not "Bearer T".
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
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
)

type request struct {
	App        string            `json:"app"`
	Labels     map[string]string `json:"labels"`
	From       int64             `json:"from"`
	Until      int64             `json:"until"`
	SampleRate string            `json:"sample_rate"`
	Spy        string            `json:"spy"`
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

func ingest(r *http.Request, dir string, n int) (int, error) {
	q := r.URL.Query()
	if r.Method != http.MethodPost || r.URL.Path != "/ingest" {
		return 404, fmt.Errorf("not POST /ingest: %s %s", r.Method, r.URL.Path)
	}
	if q.Get("format") != "pprof" {
		return 400, fmt.Errorf("format %q, want pprof", q.Get("format"))
	}
	var req request
	var err error
	if req.App, req.Labels, err = parseName(q.Get("name")); err != nil {
		return 400, err
	}
	if req.From, err = strconv.ParseInt(q.Get("from"), 10, 64); err != nil {
		return 400, fmt.Errorf("from: %v", err)
	}
	if req.Until, err = strconv.ParseInt(q.Get("until"), 10, 64); err != nil || req.Until <= req.From {
		return 400, fmt.Errorf("until %q not after from", q.Get("until"))
	}
	req.SampleRate, req.Spy = q.Get("sampleRate"), q.Get("spyName")
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return 400, fmt.Errorf("content type %q, want multipart/form-data", r.Header.Get("Content-Type"))
	}
	parts := map[string][]byte{}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 400, fmt.Errorf("multipart: %v", err)
		}
		b, err := io.ReadAll(io.LimitReader(p, 64<<20))
		if err != nil {
			return 400, err
		}
		if _, dup := parts[p.FormName()]; dup {
			return 400, fmt.Errorf("part %s twice", p.FormName())
		}
		parts[p.FormName()] = b
	}
	prof, cfg := parts["profile"], parts["sample_type_config"]
	if len(parts) != 2 || prof == nil || cfg == nil {
		return 400, fmt.Errorf("form parts %d: want profile and sample_type_config", len(parts))
	}
	if err := json.Unmarshal(cfg, &req.Config); err != nil || len(req.Config) == 0 {
		return 400, fmt.Errorf("sample_type_config: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(prof))
	if err != nil {
		return 400, fmt.Errorf("profile: not gzip: %v", err)
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return 400, fmt.Errorf("profile: %v", err)
	}
	req.Authorization = r.Header.Get("Authorization")
	req.OrgID = r.Header.Get("X-Scope-OrgID")
	req.Bytes = len(prof)
	base := filepath.Join(dir, fmt.Sprintf("req-%d", n))
	js, _ := json.Marshal(&req)
	if err := os.WriteFile(base+".pb.gz", prof, 0o644); err != nil {
		return 500, err
	}
	return 200, os.WriteFile(base+".json", js, 0o644)
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
		code, err := ingest(r, *dir, count)
		if err != nil {
			log.Printf("refused: %v", err)
			http.Error(w, err.Error(), code)
			return
		}
		count++
		w.WriteHeader(http.StatusOK)
	})
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	log.Fatal(http.Serve(ln, nil))
}
