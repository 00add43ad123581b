package wasmgz_test

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
)

func TestLazyGunzipsOnceAndNamesACorruptEmbed(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte("\x00asm module bytes"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	get := wasmgz.Lazy("x.wasm.gz", gz.Bytes())
	first, second := get(), get()

	assert.Equal(t, "\x00asm module bytes", string(first))
	assert.Same(t, &first[0], &second[0], "decompressed once, the same slice after")
	assert.PanicsWithValue(t, "embedded bad.wasm.gz is corrupt: gzip: invalid header",
		func() { wasmgz.Lazy("bad.wasm.gz", []byte("this is not a gzip stream"))() })
}
