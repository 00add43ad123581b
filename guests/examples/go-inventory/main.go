//go:build wasip1

// Command go-inventory is the inventory example written in Go on the Go guest preamble
// (preamble/go): it lists the items, fetches each one and reports the total stock, waiting out
// the broker's shed answers instead of failing. It is a wasip1 command: its input is JSON on
// stdin ({"limit": 3}), its output JSON on stdout.
//
// Build and run it against the demo API:
//
//	GOOS=wasip1 GOARCH=wasm go build -o /tmp/go-inventory.wasm ./guests/examples/go-inventory
//	go run ./cmd/plimsoll-run demo --tool /tmp/go-inventory.wasm --input '{"limit":3}'
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	plimsoll "github.com/plimsoll/plimsoll/preamble/go"
)

type item struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Stock int    `json:"stock"`
}

func main() {
	var in struct {
		Limit int `json:"limit"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil || in.Limit <= 0 {
		in.Limit = 5
	}
	out, err := inventory(in.Limit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-inventory:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

func inventory(limit int) (map[string]int, error) {
	var list struct {
		Items []int `json:"items"`
	}
	if err := getJSON("/items", &list, plimsoll.WithQuery("limit", strconv.Itoa(limit))); err != nil {
		return nil, fmt.Errorf("listing items: %w", err)
	}
	stock := 0
	for _, id := range list.Items {
		var it item
		if err := getJSON("/items/"+strconv.Itoa(id), &it); err != nil {
			return nil, fmt.Errorf("item %d: %w", id, err)
		}
		stock += it.Stock
	}
	return map[string]int{"items": len(list.Items), "stock": stock}, nil
}

// getJSON fetches path into v, riding out overload. When the API answers 503 or 429 the call is
// tried again at once: the broker's breaker is open by then, so it sheds the retry without
// bothering the API and says how long to wait (ErrShed, with RetryAfter). The tool waits that
// long, up to 5 s in all, and tries again. Denied, over budget, invalid and failed calls are
// errors at once.
func getJSON(path string, v any, opts ...plimsoll.Option) error {
	waited := time.Duration(0)
	for {
		resp, err := plimsoll.Get(path, opts...)
		var refused *plimsoll.OutcomeError
		switch {
		case errors.Is(err, plimsoll.ErrShed) && errors.As(err, &refused) && waited < 5*time.Second:
			wait := max(refused.RetryAfter, 100*time.Millisecond)
			time.Sleep(wait)
			waited += wait
			continue
		case err != nil:
			return err
		case (resp.Status == 503 || resp.Status == 429) && waited < 5*time.Second:
			continue
		case !resp.OK():
			return fmt.Errorf("GET %s: %d %s", path, resp.Status, resp.Text())
		}
		return resp.JSON(v)
	}
}
