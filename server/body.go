package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/plimsoll/plimsoll/host"
)

// RequestError is a refused request: Status is the HTTP status, Field the body field (or
// header) at fault, Reason why.
type RequestError struct {
	Status int
	Field  string
	Reason string
}

func (e *RequestError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// maxAdminBody caps an admin plane request's body: a few short fields.
const maxAdminBody = 4 << 10

// decodeAdminBody decodes an admin plane request's body into v strictly: application/json, at
// most maxAdminBody bytes, one object with no unknown field and nothing after it. shape is the
// body as a refusal shows it.
func decodeAdminBody(r *http.Request, v any, shape string) *RequestError {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return &RequestError{Status: http.StatusUnsupportedMediaType, Field: "Content-Type", Reason: "the body must be application/json: " + shape}
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody+1))
	if err == nil && len(raw) > maxAdminBody {
		return &RequestError{Status: http.StatusRequestEntityTooLarge, Field: "body", Reason: fmt.Sprintf("is over %d bytes", maxAdminBody)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err == nil {
		err = dec.Decode(v)
	}
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			err = errors.New("more follows the object")
		}
	}
	if err != nil {
		return &RequestError{Status: http.StatusBadRequest, Field: "body", Reason: "the body must be " + shape + ": " + err.Error()}
	}
	return nil
}

// runRequest is a decoded POST /v1/runs body.
type runRequest struct {
	Profile string
	Tool    host.Tool
	Digest  string // "sha256:<hex>" of the code or module
	Input   []byte // JSON; "null" when absent
	Timeout time.Duration
	Wait    bool // false: answer 202 at once and run on (detached.go)
}

// wireRunRequest is the body as sent.
type wireRunRequest struct {
	Profile    *string         `json:"profile"`
	Code       *string         `json:"code"`
	Language   *string         `json:"language"`
	WasmBase64 *string         `json:"wasm_base64"`
	Input      json.RawMessage `json:"input"`
	Timeout    *string         `json:"timeout"`
	Wait       *bool           `json:"wait"`
}

// decodeRunRequest decodes and validates a POST /v1/runs body. Errors are *RequestError with
// status 400 naming the field.
func decodeRunRequest(body []byte) (runRequest, error) {
	var w wireRunRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return runRequest{}, decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return runRequest{}, bad("", "the body holds more than one JSON value")
	}
	return w.validate()
}

func bad(field, format string, args ...any) *RequestError {
	return &RequestError{Status: 400, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// decodeError names the field a JSON error is about.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return bad(te.Field, "must be a JSON %s, not %s", kindOf(te.Type.String()), te.Value)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return bad(strings.Trim(f, `"`), "unknown field (known: profile, code, language, wasm_base64, input, timeout, wait)")
	}
	return bad("", "the body is not a JSON object: %v", err)
}

func kindOf(goType string) string {
	if strings.Contains(goType, "string") {
		return "string"
	}
	return goType
}

func (w wireRunRequest) validate() (runRequest, error) {
	var r runRequest
	if w.Profile == nil || *w.Profile == "" {
		return r, bad("profile", "is required: the name of a grant profile")
	}
	r.Profile = *w.Profile
	if strings.ContainsAny(r.Profile, `/\`) || r.Profile == "." || r.Profile == ".." {
		return r, bad("profile", "%q is not a profile name", r.Profile)
	}
	tool, digest, err := w.tool()
	if err != nil {
		return r, err
	}
	r.Tool, r.Digest = tool, digest
	r.Wait = w.Wait == nil || *w.Wait
	r.Input = []byte("null")
	if len(w.Input) > 0 {
		r.Input = w.Input
	}
	if w.Timeout != nil {
		d, err := time.ParseDuration(*w.Timeout)
		if err != nil || d <= 0 {
			return r, bad("timeout", "%q is not a positive duration such as 5s or 500ms", *w.Timeout)
		}
		r.Timeout = d
	}
	return r, nil
}

// tool builds the tool from code or wasm_base64; its name carries the digest's prefix so the
// audit line ties it to the journal.
func (w wireRunRequest) tool() (host.Tool, string, error) {
	switch {
	case (w.Code == nil) == (w.WasmBase64 == nil):
		return host.Tool{}, "", bad("code", "give exactly one of code (JavaScript or Python) and wasm_base64")
	case w.Language != nil && w.Code == nil:
		return host.Tool{}, "", bad("language", "names the language of code; a wasm_base64 module has none")
	case w.Code != nil:
		if *w.Code == "" {
			return host.Tool{}, "", bad("code", "must not be empty")
		}
		d := digest([]byte(*w.Code))
		return codeTool(w.Language, d, *w.Code)
	}
	bin, err := base64.StdEncoding.DecodeString(*w.WasmBase64)
	if err != nil {
		return host.Tool{}, "", bad("wasm_base64", "is not standard base64: %v", err)
	}
	d := digest(bin)
	tool, err := host.ToolFromSource(toolName(d, ".wasm"), bin)
	if len(bin) == 0 || err != nil {
		return host.Tool{}, "", bad("wasm_base64", "the module is %d bytes: want 1 to %d", len(bin), host.MaxToolBytes)
	}
	return tool, d, nil
}

// codeTool is code in language (nil means the default, JavaScript), named after its digest.
func codeTool(language *string, digest, code string) (host.Tool, string, error) {
	lang := host.Languages()[0]
	if language != nil {
		lang = *language
	}
	k, ok := host.KindForLanguage(lang)
	if !ok || lang == "" {
		return host.Tool{}, "", bad("language", "%q is not a language plimsoll runs (known: %s)", lang, strings.Join(host.Languages(), ", "))
	}
	tool, err := host.ToolFromSource(toolName(digest, k.Extensions()[0]), []byte(code))
	if err != nil {
		return host.Tool{}, "", bad("code", "is over %d bytes", host.MaxToolBytes)
	}
	return tool, digest, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func toolName(digest, ext string) string {
	return "sha256-" + strings.TrimPrefix(digest, "sha256:")[:16] + ext
}
