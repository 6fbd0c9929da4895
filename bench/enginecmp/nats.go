package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/resil/engine"
)

// natsStore is raw JetStream: a stream for the log, a KV bucket for the
// checkpoint.
type natsStore struct {
	nc     *nats.Conn
	stream jetstream.Stream
	kv     jetstream.KeyValue
	js     jetstream.JetStream
}

func openNATS(urls []string, replicas int) (*natsStore, error) {
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	s := &natsStore{nc: nc, js: js}
	// A cluster answers once its meta leader is elected.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: "BENCH", Subjects: []string{"bench.log"}, Replicas: replicas, Storage: jetstream.FileStorage,
		})
		if err == nil {
			s.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "ckpt", Replicas: replicas})
		}
		cancel()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			nc.Close()
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *natsStore) Append(ctx context.Context, data []byte) (uint64, error) {
	ack, err := s.js.Publish(ctx, "bench.log", data)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

func (s *natsStore) CAS(ctx context.Context, data []byte, rev uint64) (uint64, error) {
	if rev == 0 {
		return s.kv.Create(ctx, "k", data)
	}
	return s.kv.Update(ctx, "k", data, rev)
}

func (s *natsStore) Replay(ctx context.Context, after uint64) (int, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	last := info.State.LastSeq
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: after + 1,
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return n, err
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return n, err
			}
			n++
			if md.Sequence.Stream >= last {
				return n, nil
			}
		}
		if err := batch.Error(); err != nil {
			return n, err
		}
	}
}

func (s *natsStore) Close() { s.nc.Close() }

// fencedStore is resil/engine over the same server(s).
type fencedStore struct {
	e *engine.Engine
	u *engine.Unit
}

func openFenced(urls []string, replicas int) (*fencedStore, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := engine.Connect(ctx, urls, engine.Config{Replicas: replicas})
	if err != nil {
		return nil, err
	}
	u, err := e.Acquire(ctx, "bench")
	if err != nil {
		e.Close()
		return nil, err
	}
	return &fencedStore{e: e, u: u}, nil
}

func (s *fencedStore) Append(ctx context.Context, data []byte) (uint64, error) {
	return s.u.Append(ctx, data)
}

func (s *fencedStore) CAS(ctx context.Context, data []byte, rev uint64) (uint64, error) {
	return s.u.PutCheckpoint(ctx, "k", data, rev)
}

func (s *fencedStore) Replay(ctx context.Context, after uint64) (int, error) {
	n := 0
	err := s.e.ReplayFrom(ctx, "bench", after+1, func(uint64, []byte) error { n++; return nil })
	return n, err
}

func (s *fencedStore) Close() { s.e.Close() }

func natsSingle() (*setup, error) {
	port, err := freeport.TCP()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "enginecmp-nats-")
	if err != nil {
		return nil, err
	}
	before := rssKiB(os.Getpid())
	start := time.Now()
	srv, err := engine.NewServer(engine.ServerConfig{StoreDir: dir, Listen: "127.0.0.1:" + strconv.Itoa(port)})
	if err != nil {
		return nil, err
	}
	url := srv.ClientURL()
	st, err := openNATS([]string{url}, 1)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	rss := rssKiB(os.Getpid()) - before
	f, err := openFenced([]string{url}, 1)
	if err != nil {
		return nil, err
	}
	return &setup{name: "nats 1 embedded", start: took, rssKiB: rss, store: st, fenced: f, cleanup: func() {
		st.Close()
		f.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}}, nil
}

func natsCluster() (*setup, error) {
	var cfgs []engine.ServerConfig
	var routes, urls []string
	for i := range 3 {
		cp, err := freeport.TCP()
		if err != nil {
			return nil, err
		}
		rp, err := freeport.TCP()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "enginecmp-nats-")
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, engine.ServerConfig{
			Name: "n" + strconv.Itoa(i), StoreDir: dir, ClusterName: "bench",
			Listen: "127.0.0.1:" + strconv.Itoa(cp), ClusterListen: "127.0.0.1:" + strconv.Itoa(rp),
		})
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(rp))
		urls = append(urls, "nats://127.0.0.1:"+strconv.Itoa(cp))
	}
	start := time.Now()
	cmds, err := startMembers("nats", 3, func(i int) string {
		c := cfgs[i]
		c.Routes = routes
		b, _ := json.Marshal(c)
		return string(b)
	})
	if err != nil {
		return nil, err
	}
	st, err := openNATS(urls, 3)
	if err != nil {
		killAll(cmds)
		return nil, err
	}
	took := time.Since(start)
	f, err := openFenced(urls, 3)
	if err != nil {
		killAll(cmds)
		return nil, err
	}
	return &setup{name: "nats 3 processes R3", start: took, rssKiB: sumRSS(cmds), store: st, fenced: f, cleanup: func() {
		st.Close()
		f.Close()
		killAll(cmds)
		for _, c := range cfgs {
			os.RemoveAll(c.StoreDir)
		}
	}}, nil
}

func natsMember(js string) error {
	var cfg engine.ServerConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		return err
	}
	s, err := engine.NewServer(cfg)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	s.WaitForShutdown()
	return nil
}
