// Package nvimrpc is a minimal msgpack-RPC client for Neovim's --listen
// socket, for the editor plugin tests and benchmarks that drive a real
// Neovim: just enough msgpack to call nvim_exec_lua, nvim_command and
// nvim_input.
package nvimrpc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
)

// Client is a connection to one Neovim.
type Client struct {
	conn net.Conn
	wmu  sync.Mutex

	mu      sync.Mutex
	nextID  uint32
	pending map[uint32]chan rpcResult
	err     error
}

type rpcResult struct {
	err    any
	result any
}

// Dial connects to the socket Neovim listens on (--listen path).
func Dial(path string) (*Client, error) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	r := &Client{conn: conn, pending: map[uint32]chan rpcResult{}}
	go r.read()
	return r, nil
}

// Close ends the connection.
func (r *Client) Close() error { return r.conn.Close() }

func (r *Client) read() {
	br := bufio.NewReader(r.conn)
	for {
		v, err := decodeMsgpack(br)
		if err != nil {
			r.mu.Lock()
			r.err = err
			for id, ch := range r.pending {
				close(ch)
				delete(r.pending, id)
			}
			r.mu.Unlock()
			return
		}
		msg, ok := v.([]any)
		if !ok || len(msg) < 3 {
			continue
		}
		if kind, _ := msg[0].(int64); kind != 1 || len(msg) != 4 {
			continue // notifications and requests from nvim are not used
		}
		id, _ := msg[1].(int64)
		r.mu.Lock()
		ch := r.pending[uint32(id)]
		delete(r.pending, uint32(id))
		r.mu.Unlock()
		if ch != nil {
			ch <- rpcResult{err: msg[2], result: msg[3]}
		}
	}
}

// Call runs an API method and returns its result.
func (r *Client) Call(method string, args ...any) (any, error) {
	if args == nil {
		args = []any{}
	}
	ch := make(chan rpcResult, 1)
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return nil, r.err
	}
	r.nextID++
	id := r.nextID
	r.pending[id] = ch
	r.mu.Unlock()
	var buf []byte
	buf = encodeMsgpack(buf, []any{int64(0), int64(id), method, args})
	r.wmu.Lock()
	_, err := r.conn.Write(buf)
	r.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	res, ok := <-ch
	if !ok {
		return nil, fmt.Errorf("%s: connection to nvim lost", method)
	}
	if res.err != nil {
		if e, ok := res.err.([]any); ok && len(e) == 2 {
			return nil, fmt.Errorf("%s: %v", method, e[1])
		}
		return nil, fmt.Errorf("%s: %v", method, res.err)
	}
	return res.result, nil
}

func encodeMsgpack(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0xc0)
	case bool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case int:
		return encodeMsgpack(b, int64(x))
	case int64:
		if x >= 0 && x < 128 {
			return append(b, byte(x))
		}
		b = append(b, 0xd3)
		return binary.BigEndian.AppendUint64(b, uint64(x))
	case string:
		switch n := len(x); {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n < 1<<16:
			b = append(b, 0xda)
			b = binary.BigEndian.AppendUint16(b, uint16(n))
		default:
			b = append(b, 0xdb)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		return append(b, x...)
	case []any:
		if len(x) < 16 {
			b = append(b, 0x90|byte(len(x)))
		} else {
			b = append(b, 0xdd)
			b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
		}
		for _, e := range x {
			b = encodeMsgpack(b, e)
		}
		return b
	case map[string]any:
		b = append(b, 0xdf)
		b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
		for k, e := range x {
			b = encodeMsgpack(b, k)
			b = encodeMsgpack(b, e)
		}
		return b
	}
	panic(fmt.Sprintf("msgpack: cannot encode %T", v))
}

func readN(r *bufio.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func readUint(r *bufio.Reader, size int) (uint64, error) {
	b, err := readN(r, size)
	if err != nil {
		return 0, err
	}
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	return u, nil
}

// decodeMsgpack reads one value: integers as int64, strings and binary as
// string, arrays as []any, maps as map[string]any, ext (Neovim's handles)
// as int64.
func decodeMsgpack(r *bufio.Reader) (any, error) {
	t, err := r.ReadByte()
	if err != nil {
		return nil, err
	}
	switch {
	case t <= 0x7f:
		return int64(t), nil
	case t >= 0xe0:
		return int64(int8(t)), nil
	case t&0xe0 == 0xa0:
		b, err := readN(r, int(t&0x1f))
		return string(b), err
	case t&0xf0 == 0x90:
		return decodeArray(r, int(t&0x0f))
	case t&0xf0 == 0x80:
		return decodeMap(r, int(t&0x0f))
	}
	switch t {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, err := readUint(r, 1<<(t-0xcc))
		return int64(u), err
	case 0xd0, 0xd1, 0xd2, 0xd3:
		size := 1 << (t - 0xd0)
		u, err := readUint(r, size)
		shift := 64 - 8*size
		return int64(u<<shift) >> shift, err
	case 0xca:
		u, err := readUint(r, 4)
		return float64(math.Float32frombits(uint32(u))), err
	case 0xcb:
		u, err := readUint(r, 8)
		return math.Float64frombits(u), err
	case 0xd9, 0xda, 0xdb, 0xc4, 0xc5, 0xc6:
		size := map[byte]int{0xd9: 1, 0xda: 2, 0xdb: 4, 0xc4: 1, 0xc5: 2, 0xc6: 4}[t]
		n, err := readUint(r, size)
		if err != nil {
			return nil, err
		}
		b, err := readN(r, int(n))
		return string(b), err
	case 0xdc, 0xdd:
		n, err := readUint(r, 2<<(t-0xdc))
		if err != nil {
			return nil, err
		}
		return decodeArray(r, int(n))
	case 0xde, 0xdf:
		n, err := readUint(r, 2<<(t-0xde))
		if err != nil {
			return nil, err
		}
		return decodeMap(r, int(n))
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		size := 1 << (t - 0xd4)
		return decodeExt(r, size)
	case 0xc7, 0xc8, 0xc9:
		n, err := readUint(r, 1<<(t-0xc7))
		if err != nil {
			return nil, err
		}
		return decodeExt(r, int(n))
	}
	return nil, fmt.Errorf("msgpack: unknown type byte %#x", t)
}

func decodeExt(r *bufio.Reader, size int) (any, error) {
	b, err := readN(r, size+1) // type byte, then data
	if err != nil {
		return nil, err
	}
	v, err := decodeMsgpack(bufio.NewReader(bytes.NewReader(b[1:])))
	if err != nil {
		return nil, errors.New("msgpack: unreadable ext value")
	}
	return v, nil
}

func decodeArray(r *bufio.Reader, n int) ([]any, error) {
	out := make([]any, n)
	for i := range out {
		v, err := decodeMsgpack(r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func decodeMap(r *bufio.Reader, n int) (map[string]any, error) {
	out := make(map[string]any, n)
	for i := 0; i < n; i++ {
		k, err := decodeMsgpack(r)
		if err != nil {
			return nil, err
		}
		v, err := decodeMsgpack(r)
		if err != nil {
			return nil, err
		}
		out[fmt.Sprint(k)] = v
	}
	return out, nil
}
