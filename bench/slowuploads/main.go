package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	api := flag.String("api", "127.0.0.1:7480", "the sidecar's API address")
	conns := flag.Int("conns", 1600, "slow uploads to hold open")
	every := flag.Duration("every", 300*time.Millisecond, "one byte of each upload's body per this interval")
	settle := flag.Duration("settle", 3*time.Second, "wait before the new clients")
	clients := flag.Int("clients", 10, "appends of a new client, timed")
	flag.Parse()

	// this process holds every slow connection: raise its own file limit
	lim := syscall.Rlimit{Cur: uint64(*conns) + 256, Max: uint64(*conns) + 256}
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)

	var open, answered atomic.Int64
	head := "POST /v1/users/slow/sessions/s/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
	for range *conns {
		c, err := net.DialTimeout("tcp", *api, 5*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			break
		}
		open.Add(1)
		go func() {
			defer c.Close()
			if _, err := c.Write([]byte(head)); err != nil {
				return
			}
			go func() {
				buf := make([]byte, 512)
				if n, _ := c.Read(buf); n > 0 {
					answered.Add(1)
				}
			}()
			for {
				time.Sleep(*every)
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
	}
	fmt.Printf("%d slow uploads open\n", open.Load())
	time.Sleep(*settle)

	body := `{"role":"user","content":"hello"}`
	var took []time.Duration
	for i := range *clients {
		start := time.Now()
		c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Post(fmt.Sprintf("http://%s/v1/users/new/sessions/s%d/messages", *api, i), "application/json", strings.NewReader(body))
		d := time.Since(start)
		if err != nil {
			fmt.Printf("client %d: %v after %s\n", i, err, d)
			continue
		}
		resp.Body.Close()
		fmt.Printf("client %d: %d in %s\n", i, resp.StatusCode, d.Round(time.Millisecond))
		took = append(took, d)
	}
	slices.Sort(took)
	if len(took) > 0 {
		fmt.Printf("new clients: %d served; median %s, max %s; slow uploads answered so far: %d\n",
			len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), answered.Load())
	}
}
