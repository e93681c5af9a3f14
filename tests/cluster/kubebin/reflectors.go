package main

// reflectors is the fleet benchmark's anchor (tools/bench/fleet.sh): N client-go reflectors,
// each with its own node identity (the client certificate of system:node:PREFIX<i>), watching
// the pods of its node by the field selector spec.nodeName=PREFIX<i>, exactly as the kubelet's
// pod source does (pkg/kubelet/config/apiserver.go NewSourceApiserver: a ListWatch from the
// clientset's RESTClient on "pods" in all namespaces with that selector, a Reflector into an
// UndeltaStore, resync 0), with the kubelet's client defaults (KubeletConfiguration
// kubeAPIQPS 50, kubeAPIBurst 100). Each node has its own rest.Config and so its own transport
// and connection (client-go caches transports by TLS configuration: distinct certificates,
// distinct connections), as N kubelets would.
//
//	kubebin reflectors --server URL --ca FILE --pki DIR --nodes N [--prefix P] [--first I]
//	                   [--qps 50] [--burst 100] [--content-type json|protobuf]
//
// The certificate of node NAME is DIR/node-NAME.crt with its key DIR/node-NAME.key
// (tests/cluster/cluster.sh node_cert). Prints "reflectors: synced N in S s" once every
// reflector has its first list, then runs until SIGTERM or SIGINT. On SIGUSR1, and at exit, it
// prints what the reflectors asked for, counted on the client side (every attempt, including
// those the server never saw): "reflectors: lists=L watches=W list_errors=E watch_errors=F".
// --content-type: json (the default, as evictd asks: the same encoding on both sides of the
// benchmark) or protobuf (the kubelet's default, kubeAPIContentType).

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

type reflectorCounts struct {
	lists, watches, listErrors, watchErrors atomic.Int64
}

func (c *reflectorCounts) String() string {
	return fmt.Sprintf("lists=%d watches=%d list_errors=%d watch_errors=%d",
		c.lists.Load(), c.watches.Load(), c.listErrors.Load(), c.watchErrors.Load())
}

func reflectors(args []string) int {
	fs := flag.NewFlagSet("reflectors", flag.ContinueOnError)
	server := fs.String("server", "", "the API server, https://HOST:PORT")
	ca := fs.String("ca", "", "the cluster CA (PEM)")
	pki := fs.String("pki", "", "directory of node-NAME.crt and node-NAME.key")
	nodes := fs.Int("nodes", 0, "how many nodes (reflectors)")
	first := fs.Int("first", 0, "the first node's number")
	prefix := fs.String("prefix", "fleet-node-", "node names: PREFIX and the number, 4 digits")
	qps := fs.Float64("qps", 50, "client QPS (the kubelet's kubeAPIQPS)")
	burst := fs.Int("burst", 100, "client burst (the kubelet's kubeAPIBurst)")
	contentType := fs.String("content-type", "json", "json or protobuf (the kubelet's default)")
	syncTimeout := fs.Duration("sync-timeout", 5*time.Minute, "give up when not all have synced by then")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *server == "" || *ca == "" || *pki == "" || *nodes <= 0 {
		fmt.Fprintln(os.Stderr, "usage: kubebin reflectors --server URL --ca FILE --pki DIR --nodes N [--prefix P] [--first I] [--qps Q] [--burst B] [--content-type json|protobuf]")
		return 2
	}
	ct := runtime.ContentTypeJSON
	switch *contentType {
	case "json":
	case "protobuf":
		ct = runtime.ContentTypeProtobuf
	default:
		fmt.Fprintf(os.Stderr, "reflectors: --content-type %q: json or protobuf\n", *contentType)
		return 2
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counts := &reflectorCounts{}
	var pending sync.WaitGroup
	start := time.Now()
	for i := *first; i < *first+*nodes; i++ {
		name := fmt.Sprintf("%s%04d", *prefix, i)
		config := &rest.Config{
			Host: *server,
			TLSClientConfig: rest.TLSClientConfig{
				CAFile:   *ca,
				CertFile: filepath.Join(*pki, "node-"+name+".crt"),
				KeyFile:  filepath.Join(*pki, "node-"+name+".key"),
			},
			ContentConfig: rest.ContentConfig{ContentType: ct},
			QPS:           float32(*qps),
			Burst:         *burst,
			UserAgent:     "fleet-reflectors/" + name,
		}
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			fmt.Fprintf(os.Stderr, "reflectors: %s: %v\n", name, err)
			return 1
		}
		// The kubelet's ListWatch (NewListWatchFromClient), each call counted.
		lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
			fields.OneTermEqualSelector("spec.nodeName", name))
		counted := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
				counts.lists.Add(1)
				obj, err := lw.ListWithContext(ctx, options)
				if err != nil {
					counts.listErrors.Add(1)
				}
				return obj, err
			},
			WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
				counts.watches.Add(1)
				w, err := lw.WatchWithContext(ctx, options)
				if err != nil {
					counts.watchErrors.Add(1)
				}
				return w, err
			},
		}
		pending.Add(1)
		var once sync.Once
		// The kubelet's store: every change pushes the node's whole pod list (the first push is
		// the first list's Replace).
		store := cache.NewUndeltaStore(func([]interface{}) { once.Do(pending.Done) }, cache.MetaNamespaceKeyFunc)
		r := cache.NewReflectorWithOptions(counted, &v1.Pod{}, store, cache.ReflectorOptions{Name: name})
		go r.RunWithContext(ctx)
	}

	synced := make(chan struct{})
	go func() { pending.Wait(); close(synced) }()
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	deadline := time.NewTimer(*syncTimeout)
	for waiting := true; ; {
		select {
		case <-synced:
			fmt.Printf("reflectors: synced %d in %.1f s\n", *nodes, time.Since(start).Seconds())
			synced, waiting = nil, false
			deadline.Stop()
		case <-deadline.C:
			if waiting {
				fmt.Fprintf(os.Stderr, "reflectors: not all %d synced within %s (%s)\n", *nodes, *syncTimeout, counts)
				return 1
			}
		case s := <-signals:
			fmt.Printf("reflectors: %s\n", counts)
			if s != syscall.SIGUSR1 {
				cancel()
				klog.Flush()
				return 0
			}
		}
	}
}
