// argo-sync syncs a folder of manifests the way Argo CD's application controller runs a sync operation, through the
// gitops-engine that an Argo CD release pins, against a real API server: so the cluster tests see what that release's
// engine does with a hook (its hook finalizer, its delete policies, its reading of a Job's health), not our reading of
// its source.
//
//	argo-sync --versions                  the Argo CD versions whose engine is built beside this binary, one per line
//	argo-sync --argocd VERSION --namespace NS --timeout SECONDS [--as USER] DIR
//	argo-sync --argocd VERSION --health FILE   what pkg/health says of each object in FILE (- for stdin): one
//	                                           {"kind", "name", "status", "message"} per line
//
// One binary carries one engine (a Go module holds one version of a module path): this one's is set at build time
// (engineArgoCD); given another --argocd it runs the sibling binary argo-sync-VERSION. It prints, once the operation
// ends or the timeout passes (then "phase" is "Running"):
//
//	{"phase": …, "message": …, "hooks": [{"kind", "name", "phase", "message"}]}
//
// What it does as the application controller does (argo-cd controller/sync.go, v2.14.3 to v3.2.x): one cluster cache
// (gitops-engine pkg/cache) watching the namespace; on every round a new sync context built from the live objects the
// cache holds and the operation's state so far (sync.WithInitialState), one Sync(), then GetState(). A round starts when
// a managed object changes in the cache, or after a second; or, with --observe-every, only that often (Argo CD's
// controller looks again when its refresh of the application comes round, seconds later on a busy one). Every object it applies carries the tracking label
// app.kubernetes.io/instance (Argo CD's default label tracking) so the cache counts it as managed; a hook's live object is
// found by that label, as Argo CD's are. What it leaves out: diffing (every sync applies every object), pruning,
// retries, the Application resource itself, Lua health overrides and Argo CD's delete-phase hooks (PreDelete,
// PostDelete), which the controller, not the engine, runs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"

	"github.com/argoproj/gitops-engine/pkg/cache"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/argoproj/gitops-engine/pkg/sync"
	"github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/argoproj/gitops-engine/pkg/utils/kube"
	"github.com/argoproj/gitops-engine/pkg/utils/tracing"
)

// engineArgoCD is the Argo CD version whose pinned gitops-engine this binary was built with (-ldflags -X).
var engineArgoCD = "unset"

const trackingLabel = "app.kubernetes.io/instance"

type hookResult struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Phase   string `json:"phase"`
	Message string `json:"message"`
}

type operationResult struct {
	Phase   string       `json:"phase"`
	Message string       `json:"message"`
	Hooks   []hookResult `json:"hooks"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "argo-sync: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("argo-sync", flag.ContinueOnError)
	versions := flags.Bool("versions", false, "print the Argo CD versions whose engine is built here, one per line")
	argocd := flags.String("argocd", "", "the Argo CD version whose gitops-engine runs the sync")
	namespace := flags.String("namespace", "", "the namespace of the objects that name none, and the one the cache watches")
	timeout := flags.Int("timeout", 60, "seconds before it stops waiting and prints the operation as Running")
	kubeconfig := flags.String("kubeconfig", os.Getenv("KUBECONFIG"), "the kubeconfig file (default $KUBECONFIG)")
	app := flags.String("app", "argo-sync", "the application name its tracking label carries")
	healthOf := flags.String("health", "", "print the engine's health of each object in this file (- for stdin) and exit")
	observeEvery := flags.Float64("observe-every", 0, "look at the live objects only this often, in seconds (0: on every change, or each second), as a busy controller whose refreshes queue")
	as := flags.String("as", "", "the user it acts as, as Argo CD's controller acts as its ServiceAccount (impersonated)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *versions {
		for _, version := range builtVersions() {
			fmt.Fprintln(stdout, version)
		}
		return nil
	}
	if *argocd != "" && *argocd != engineArgoCD {
		return runSibling(*argocd, args)
	}
	if *argocd != "" && *healthOf != "" {
		return printHealth(*healthOf, stdout)
	}
	if *argocd == "" || *namespace == "" || flags.NArg() != 1 {
		return errors.New("usage: argo-sync --argocd VERSION --namespace NS --timeout SECONDS DIR (or --versions)")
	}
	targets, err := readManifests(flags.Arg(0), *app)
	if err != nil {
		return err
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", *kubeconfig, err)
	}
	config.Impersonate.UserName = *as
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*timeout)*time.Second)
	defer cancel()
	result, err := syncOperation(ctx, config, targets, *namespace, *app, time.Duration(*observeEvery*float64(time.Second)))
	if err != nil {
		return err
	}
	encoder := json.NewEncoder(stdout)
	return encoder.Encode(result)
}

// printHealth prints what health.GetResourceHealth (no Lua overrides, as with none configured) says of each object.
func printHealth(file string, stdout io.Writer) error {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	objects, err := kube.SplitYAML(data)
	if err != nil {
		return err
	}
	encoder := json.NewEncoder(stdout)
	for _, object := range objects {
		status, err := health.GetResourceHealth(object, nil)
		if err != nil {
			return fmt.Errorf("%s %s: %w", object.GetKind(), object.GetName(), err)
		}
		line := map[string]string{"kind": object.GetKind(), "name": object.GetName(), "status": "", "message": ""}
		if status != nil {
			line["status"], line["message"] = string(status.Status), status.Message
		}
		if err := encoder.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// builtVersions lists this binary's engine and its siblings' (argo-sync-VERSION in the same folder).
func builtVersions() []string {
	found := map[string]bool{engineArgoCD: true}
	if self, err := os.Executable(); err == nil {
		matches, _ := filepath.Glob(filepath.Join(filepath.Dir(self), "argo-sync-*"))
		for _, match := range matches {
			found[strings.TrimPrefix(filepath.Base(match), "argo-sync-")] = true
		}
	}
	versions := make([]string, 0, len(found))
	for version := range found {
		versions = append(versions, version)
	}
	sort.Strings(versions)
	return versions
}

func runSibling(version string, args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sibling := filepath.Join(filepath.Dir(self), "argo-sync-"+version)
	if _, err := os.Stat(sibling); err != nil {
		return fmt.Errorf("no engine for Argo CD %s here (built: %s)", version, strings.Join(builtVersions(), ", "))
	}
	return syscall.Exec(sibling, append([]string{sibling}, args...), os.Environ())
}

// readManifests reads every .yaml, .yml and .json file of dir, as Argo CD reads a plain directory source (kube.SplitYAML,
// sigs.k8s.io/yaml: YAML 1.1, so 0777 is octal), and adds the tracking label.
func readManifests(dir, app string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	for _, entry := range entries {
		extension := filepath.Ext(entry.Name())
		if entry.IsDir() || (extension != ".yaml" && extension != ".yml" && extension != ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, entry.Name()))
		if err != nil {
			return nil, err
		}
		documents, err := kube.SplitYAML(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", entry.Name(), err)
		}
		for _, object := range documents {
			labels := object.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[trackingLabel] = app
			object.SetLabels(labels)
			objects = append(objects, object)
		}
	}
	return objects, nil
}

func syncOperation(ctx context.Context, config *rest.Config, targets []*unstructured.Unstructured, namespace, app string, observeEvery time.Duration) (*operationResult, error) {
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr)))
	isManaged := func(un *unstructured.Unstructured) bool { return un.GetLabels()[trackingLabel] == app }
	clusterCache := cache.NewClusterCache(config,
		cache.SetNamespaces([]string{namespace}),
		cache.SetLogr(log),
		cache.SetPopulateResourceInfoHandler(func(un *unstructured.Unstructured, _ bool) (any, bool) {
			return nil, isManaged(un)
		}),
	)
	if err := clusterCache.EnsureSynced(); err != nil {
		return nil, fmt.Errorf("cluster cache: %w", err)
	}
	defer clusterCache.Invalidate()
	for _, target := range targets {
		if target.GetNamespace() != "" {
			continue
		}
		if namespaced, err := clusterCache.IsNamespaced(target.GroupVersionKind().GroupKind()); err == nil && namespaced {
			target.SetNamespace(namespace)
		}
	}
	changed := make(chan struct{}, 1)
	unsubscribe := clusterCache.OnResourceUpdated(func(newRes, oldRes *cache.Resource, _ map[kube.ResourceKey]*cache.Resource) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()

	kubectl := &kube.KubectlCmd{Log: log, Tracer: tracing.NopTracer{}}
	phase, message := common.OperationRunning, ""
	var results []common.ResourceSyncResult
	startedAt := metav1.Now()
	for {
		live, err := clusterCache.GetManagedLiveObjs(targets, func(r *cache.Resource) bool { return r.Resource != nil && isManaged(r.Resource) })
		if err != nil {
			return nil, fmt.Errorf("live objects: %w", err)
		}
		reconciled := sync.Reconcile(targets, live, namespace, clusterCache)
		syncContext, cleanup, err := sync.NewSyncContext("argo-sync", reconciled, config, config, kubectl, namespace,
			clusterCache.GetOpenAPISchema(),
			sync.WithInitialState(phase, message, results, startedAt),
			sync.WithLogr(log),
		)
		if err != nil {
			return nil, fmt.Errorf("sync context: %w", err)
		}
		syncContext.Sync()
		phase, message, results = syncContext.GetState()
		cleanup()
		if phase.Completed() {
			return resultOf(phase, message, results), nil
		}
		if observeEvery > 0 {
			select {
			case <-ctx.Done():
				return resultOf(phase, message, results), nil
			case <-time.After(observeEvery):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return resultOf(phase, message, results), nil
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

func resultOf(phase common.OperationPhase, message string, results []common.ResourceSyncResult) *operationResult {
	out := &operationResult{Phase: string(phase), Message: message, Hooks: []hookResult{}}
	for _, result := range results {
		if result.HookType == "" {
			continue
		}
		out.Hooks = append(out.Hooks, hookResult{
			Kind:    result.ResourceKey.Kind,
			Name:    result.ResourceKey.Name,
			Phase:   string(result.HookPhase),
			Message: result.Message,
		})
	}
	return out
}
