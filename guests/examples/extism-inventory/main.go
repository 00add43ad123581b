//go:build wasip1

// Command extism-inventory is the inventory example as an Extism plugin, written in Go with
// github.com/extism/go-pdk on preamble/extism-go: its function run lists the items, fetches
// each one and reports the total stock, waiting out the broker's shed answers. Its input is
// JSON ({"limit": 3}), its output JSON; its calls go through plimsoll_call.
//
// Build and run it against the demo API:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -tags plimsoll_extism -o /tmp/inventory.wasm ./guests/examples/extism-inventory
//	go run ./cmd/plimsoll-run demo --tool /tmp/inventory.wasm --input '{"limit":3}'
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/extism/go-pdk"

	plimsoll "github.com/plimsoll/plimsoll/preamble/extism-go"
)

func main() {}

type item struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Stock int    `json:"stock"`
}

//go:wasmexport run
func run() int32 {
	var in struct {
		Limit int `json:"limit"`
	}
	if err := json.Unmarshal(pdk.Input(), &in); err != nil || in.Limit <= 0 {
		in.Limit = 5
	}
	out, err := inventory(in.Limit)
	if err != nil {
		pdk.SetError(fmt.Errorf("extism-inventory: %w", err))
		return 1
	}
	pdk.Log(pdk.LogInfo, fmt.Sprintf("%d items, %d in stock", out["items"], out["stock"]))
	if err := pdk.OutputJSON(out); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
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

// getJSON fetches path into v, riding out overload as the go-inventory example does: a 503 or
// 429 is tried again at once (the breaker is open by then, so the broker sheds the retry), and a
// shed answer is waited out for its Retry-After, up to 5 s in all.
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
