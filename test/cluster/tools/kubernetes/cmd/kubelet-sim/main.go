// kubelet-sim plays the kubelet for the cluster tests: it registers fake Nodes and runs the Pods the real scheduler
// binds to them, from annotations on the Pod (a Job's pod template carries them), writing Pod status, Events and
// container logs the way the kubelet of the same release does. No container runs.
//
// Annotations (docs/testing.md lists them too):
//
//	test.hookguard.io/run-seconds           how long each main container runs (default 1; decimals allowed)
//	test.hookguard.io/exit-code             each main container's exit code (default 0)
//	test.hookguard.io/termination-message   terminated.message of each main container
//	test.hookguard.io/log                   what `kubectl logs` returns for every container
//	test.hookguard.io/image-pull: fail      the image pull fails: ErrImagePull, then ImagePullBackOff, with Events
//	test.hookguard.io/image-pull-container  only this container's pull fails (default: every container's)
//	test.hookguard.io/oom: "true"           the main containers are OOM-killed (exit 137, OOMKilled)
//
// Init containers run first, in order: one whose command is a sleep of N seconds (`sleep N`, `/busybox/sleep N`,
// `sh -c "sleep N"`) takes N seconds, others none. Restartable init containers (sidecars) start and keep running
// until the main containers end. Formats are those of k8s.io/kubernetes v1.37.2: pkg/kubelet/images/image_manager.go
// (pull Events and messages), pkg/kubelet/kuberuntime/kuberuntime_container.go ("Error: %v" Events),
// pkg/kubelet/events/event.go (reasons) and pkg/kubelet/status (phase and conditions).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

const (
	annotationPrefix = "test.hookguard.io/"
	nodeLabel        = "test.hookguard.io/simulated"
	kubeletPort      = 10250
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "admin kubeconfig")
	nodeCount := flag.Int("nodes", 2, "how many fake Nodes to register")
	nodePrefix := flag.String("node-prefix", "sim-node-", "the fake Nodes' names are this prefix and a number")
	port := flag.Int("port", kubeletPort, "port of the kubelet API the API server calls for logs (127.0.0.1)")
	pullBackOff := flag.Duration("pull-backoff", 2*time.Second, "time from ErrImagePull to ImagePullBackOff")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("kubelet-sim: kubeconfig: %v", err)
	}
	config.QPS, config.Burst = 200, 400
	client := kubernetes.NewForConfigOrDie(config)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	sim := &simulator{client: client, prefix: *nodePrefix, pullBackOff: *pullBackOff, runs: map[types.UID]context.CancelFunc{}}
	go sim.serveLogs(*port)
	for i := 0; i < *nodeCount; i++ {
		if err := sim.registerNode(ctx, fmt.Sprintf("%s%d", *nodePrefix, i), *port); err != nil {
			log.Fatalf("kubelet-sim: node: %v", err)
		}
	}
	go sim.heartbeat(ctx, *nodeCount)

	listWatch := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		fields.OneTermNotEqualSelector("spec.nodeName", ""))
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: listWatch,
		ObjectType:    &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { sim.observe(ctx, obj.(*corev1.Pod)) },
			UpdateFunc: func(_, obj any) { sim.observe(ctx, obj.(*corev1.Pod)) },
			DeleteFunc: func(obj any) {
				if pod, ok := obj.(*corev1.Pod); ok {
					sim.forget(pod.UID)
				}
			},
		},
	})
	log.Printf("kubelet-sim: %d nodes registered, watching pods", *nodeCount)
	informer.Run(ctx.Done())
}

type simulator struct {
	client      kubernetes.Interface
	prefix      string
	pullBackOff time.Duration
	mu          sync.Mutex
	runs        map[types.UID]context.CancelFunc
	logs        sync.Map // "ns/pod/container" -> log text
}

func (s *simulator) registerNode(ctx context.Context, name string, port int) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", nodeLabel: "true",
	}}}
	if _, err := s.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		// The NodeTaint admission plugin puts node.kubernetes.io/not-ready on every new Node and the node lifecycle
		// controller (not run here) takes it off once the Node is Ready: this kubelet does that part itself.
		var taints []corev1.Taint
		for _, taint := range current.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				taints = append(taints, taint)
			}
		}
		if len(taints) != len(current.Spec.Taints) {
			current.Spec.Taints = taints
			if current, err = s.client.CoreV1().Nodes().Update(ctx, current, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		now := metav1.Now()
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("8"),
			corev1.ResourceMemory:           resource.MustParse("32Gi"),
			corev1.ResourcePods:             resource.MustParse("110"),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		}
		current.Status = corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "kubelet-sim://1", OSImage: "hookguard kubelet-sim",
			},
		}
		_, err = s.client.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
}

// heartbeat keeps the Nodes' Ready condition fresh, as the kubelet's status loop does.
func (s *simulator) heartbeat(ctx context.Context, count int) {
	ticker := time.NewTicker(30 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			for i := 0; i < count; i++ {
				name := fmt.Sprintf("%s%d", s.prefix, i)
				_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
					node, err := s.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					for i := range node.Status.Conditions {
						node.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
					}
					_, err = s.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
					return err
				})
			}
		}
	}
}

func (s *simulator) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel, ok := s.runs[uid]; ok {
		cancel()
		delete(s.runs, uid)
	}
}

// observe starts one run per Pod on a fake Node, and finishes the deletion the kubelet would confirm.
func (s *simulator) observe(ctx context.Context, pod *corev1.Pod) {
	if !strings.HasPrefix(pod.Spec.NodeName, s.prefix) {
		return
	}
	if pod.DeletionTimestamp != nil {
		s.forget(pod.UID)
		// The kubelet kills the containers, then confirms the deletion with a grace period of 0.
		zero := int64(0)
		err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.Printf("kubelet-sim: delete %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, running := s.runs[pod.UID]; running {
		return
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.runs[pod.UID] = cancel
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		s.logs.Store(pod.Namespace+"/"+pod.Name+"/"+c.Name, pod.Annotations[annotationPrefix+"log"])
	}
	go func() {
		if err := s.run(runCtx, pod.DeepCopy()); err != nil && runCtx.Err() == nil {
			log.Printf("kubelet-sim: pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}()
}

// plan is what the annotations ask of one Pod.
type plan struct {
	runFor        time.Duration
	exitCode      int32
	message       string
	oom           bool
	pullFails     bool
	pullContainer string
}

func planOf(pod *corev1.Pod) plan {
	a := pod.Annotations
	p := plan{runFor: time.Second, message: a[annotationPrefix+"termination-message"]}
	if v, err := strconv.ParseFloat(a[annotationPrefix+"run-seconds"], 64); err == nil && v >= 0 {
		p.runFor = time.Duration(v * float64(time.Second))
	}
	if v, err := strconv.Atoi(a[annotationPrefix+"exit-code"]); err == nil {
		p.exitCode = int32(v)
	}
	p.oom = a[annotationPrefix+"oom"] == "true"
	p.pullFails = a[annotationPrefix+"image-pull"] == "fail"
	p.pullContainer = a[annotationPrefix+"image-pull-container"]
	return p
}

func (p plan) pullFailsFor(container string) bool {
	return p.pullFails && (p.pullContainer == "" || p.pullContainer == container)
}

var sleepCommand = regexp.MustCompile(`^(?:\S*/)?sleep\s+(\d+(?:\.\d+)?)\s*$`)

// initDuration is how long an init container takes: the N of a sleep of N seconds, else nothing.
func initDuration(c corev1.Container) time.Duration {
	words := append(append([]string{}, c.Command...), c.Args...)
	line := strings.Join(words, " ")
	if len(words) == 3 && filepath.Base(words[0]) == "sh" && words[1] == "-c" {
		line = words[2]
	}
	if m := sleepCommand.FindStringSubmatch(line); m != nil {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			return time.Duration(v * float64(time.Second))
		}
	}
	return 0
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// run plays one Pod from Pending to its end, as the kubelet's sync loop and status manager would show it.
func (s *simulator) run(ctx context.Context, pod *corev1.Pod) error {
	p := planOf(pod)
	now := metav1.Now()
	status := &pod.Status
	status.Phase = corev1.PodPending
	status.HostIP = "127.0.0.1"
	status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
	status.PodIP = podIP(pod.UID)
	status.PodIPs = []corev1.PodIP{{IP: status.PodIP}}
	status.StartTime = &now
	status.QOSClass = qosClass(pod)
	setCondition(status, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "")
	setCondition(status, corev1.PodInitialized, boolCondition(len(pod.Spec.InitContainers) == 0), "ContainersNotInitialized")
	setCondition(status, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady")
	setCondition(status, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady")
	status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, waiting(c, "PodInitializing", ""))
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, waiting(c, "ContainerCreating", ""))
	}
	if len(pod.Spec.InitContainers) > 0 {
		for i := range status.ContainerStatuses {
			status.ContainerStatuses[i].State.Waiting.Reason = "PodInitializing"
		}
	}
	if err := s.writeStatus(ctx, pod); err != nil {
		return err
	}

	// Init containers, in order; a sidecar starts and goes on while the next ones run.
	for i, c := range pod.Spec.InitContainers {
		if p.pullFailsFor(c.Name) {
			return s.failPull(ctx, pod, "spec.initContainers{"+c.Name+"}", &status.InitContainerStatuses[i], c)
		}
		s.startContainer(ctx, pod, "spec.initContainers{"+c.Name+"}", &status.InitContainerStatuses[i], c)
		if isSidecar(c) {
			status.InitContainerStatuses[i].Ready = true
			if err := s.writeStatus(ctx, pod); err != nil {
				return err
			}
			continue
		}
		if err := s.writeStatus(ctx, pod); err != nil {
			return err
		}
		if err := sleep(ctx, initDuration(c)); err != nil {
			return err
		}
		terminate(&status.InitContainerStatuses[i], 0, "Completed", "")
		if err := s.writeStatus(ctx, pod); err != nil {
			return err
		}
	}
	setCondition(status, corev1.PodInitialized, corev1.ConditionTrue, "")

	for restarts := int32(0); ; restarts++ {
		for i, c := range pod.Spec.Containers {
			if p.pullFailsFor(c.Name) {
				return s.failPull(ctx, pod, "spec.containers{"+c.Name+"}", &status.ContainerStatuses[i], c)
			}
			s.startContainer(ctx, pod, "spec.containers{"+c.Name+"}", &status.ContainerStatuses[i], c)
			status.ContainerStatuses[i].Ready = true
			status.ContainerStatuses[i].RestartCount = restarts
		}
		status.Phase = corev1.PodRunning
		setCondition(status, corev1.ContainersReady, corev1.ConditionTrue, "")
		setCondition(status, corev1.PodReady, corev1.ConditionTrue, "")
		if err := s.writeStatus(ctx, pod); err != nil {
			return err
		}
		if err := sleep(ctx, p.runFor); err != nil {
			return err
		}
		exitCode, reason := p.exitCode, "Completed"
		if p.oom {
			exitCode, reason = 137, "OOMKilled"
		} else if exitCode != 0 {
			reason = "Error"
		}
		for i := range status.ContainerStatuses {
			terminate(&status.ContainerStatuses[i], exitCode, reason, p.message)
		}
		setCondition(status, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted")
		setCondition(status, corev1.PodReady, corev1.ConditionFalse, "PodCompleted")
		restart := pod.Spec.RestartPolicy == corev1.RestartPolicyAlways ||
			(pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && exitCode != 0)
		if !restart {
			for i, c := range pod.Spec.InitContainers {
				if isSidecar(c) {
					terminate(&status.InitContainerStatuses[i], 0, "Completed", "")
				}
			}
			status.Phase = corev1.PodSucceeded
			if exitCode != 0 {
				status.Phase = corev1.PodFailed
				// The kubelet's reason for a failed Pod's readiness (v1.37.2 pkg/kubelet/status/generate.go
				// generateContainersReadyConditionForTerminalPhase): PodFailed, PodCompleted only for a Succeeded one.
				setCondition(status, corev1.ContainersReady, corev1.ConditionFalse, "PodFailed")
				setCondition(status, corev1.PodReady, corev1.ConditionFalse, "PodFailed")
			}
			setCondition(status, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "")
			return s.writeStatus(ctx, pod)
		}
		// The container is restarted in place after the kubelet's back-off.
		for i := range status.ContainerStatuses {
			cs := &status.ContainerStatuses[i]
			cs.LastTerminationState = cs.State
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off 10s restarting failed container=%s pod=%s_%s(%s)", cs.Name, pod.Name, pod.Namespace, pod.UID)}}
		}
		if exitCode == 0 {
			for i := range status.ContainerStatuses {
				status.ContainerStatuses[i].State.Waiting.Reason = "Completed"
				status.ContainerStatuses[i].State.Waiting.Message = ""
			}
		}
		if err := s.writeStatus(ctx, pod); err != nil {
			return err
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// failPull leaves the container waiting for its image for good: ErrImagePull, then ImagePullBackOff, with the
// kubelet's Events, until the Pod is deleted.
func (s *simulator) failPull(ctx context.Context, pod *corev1.Pod, fieldPath string, cs *corev1.ContainerStatus, c corev1.Container) error {
	pullError := fmt.Sprintf("rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found",
		qualified(c.Image), qualified(c.Image), qualified(c.Image))
	s.event(ctx, pod, fieldPath, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
	s.event(ctx, pod, fieldPath, corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %s", c.Image, pullError))
	s.event(ctx, pod, fieldPath, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: pullError}}
	if err := s.writeStatus(ctx, pod); err != nil {
		return err
	}
	for {
		if err := sleep(ctx, s.pullBackOff); err != nil {
			return err
		}
		message := fmt.Sprintf("Back-off pulling image %q", c.Image)
		s.event(ctx, pod, fieldPath, corev1.EventTypeNormal, "BackOff", message)
		s.event(ctx, pod, fieldPath, corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff")
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ImagePullBackOff" {
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: fmt.Sprintf("%s: ErrImagePull: %s", message, pullError)}}
			if err := s.writeStatus(ctx, pod); err != nil {
				return err
			}
		}
	}
}

func (s *simulator) startContainer(ctx context.Context, pod *corev1.Pod, fieldPath string, cs *corev1.ContainerStatus, c corev1.Container) {
	s.event(ctx, pod, fieldPath, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image))
	s.event(ctx, pod, fieldPath, corev1.EventTypeNormal, "Created", "Created container: "+c.Name)
	s.event(ctx, pod, fieldPath, corev1.EventTypeNormal, "Started", "Started container "+c.Name)
	started := true
	cs.Started = &started
	cs.ContainerID = "kubelet-sim://" + string(pod.UID) + "/" + c.Name
	cs.ImageID = qualified(c.Image)
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
}

func waiting(c corev1.Container, reason, message string) corev1.ContainerStatus {
	started := false
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: &started,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func terminate(cs *corev1.ContainerStatus, exitCode int32, reason, message string) {
	startedAt := metav1.Now()
	if cs.State.Running != nil {
		startedAt = cs.State.Running.StartedAt
	}
	started := false
	cs.Started = &started
	cs.Ready = false
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: exitCode, Reason: reason, Message: message, StartedAt: startedAt, FinishedAt: metav1.Now(), ContainerID: cs.ContainerID,
	}}
}

func boolCondition(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

func setCondition(status *corev1.PodStatus, kind corev1.PodConditionType, value corev1.ConditionStatus, reason string) {
	if value == corev1.ConditionTrue {
		reason = ""
	}
	for i := range status.Conditions {
		if status.Conditions[i].Type == kind {
			if status.Conditions[i].Status != value {
				status.Conditions[i].LastTransitionTime = metav1.Now()
			}
			status.Conditions[i].Status, status.Conditions[i].Reason = value, reason
			return
		}
	}
	status.Conditions = append(status.Conditions, corev1.PodCondition{Type: kind, Status: value, Reason: reason, LastTransitionTime: metav1.Now()})
}

func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := false, true
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			requests = true
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			limit, hasLimit := c.Resources.Limits[name]
			request, hasRequest := c.Resources.Requests[name]
			if !hasLimit || (hasRequest && request.Cmp(limit) != 0) {
				limits = false
			}
		}
	}
	switch {
	case !requests:
		return corev1.PodQOSBestEffort
	case limits:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

// podIP is a stable address in 10.244.0.0/16 made from the Pod's uid.
func podIP(uid types.UID) string {
	sum := 0
	for _, b := range []byte(uid) {
		sum = (sum*31 + int(b)) & 0xffff
	}
	return fmt.Sprintf("10.244.%d.%d", sum>>8, sum&0xff|1)
}

func qualified(image string) string {
	name := image
	if !strings.Contains(strings.Split(name, "/")[0], ".") && !strings.HasPrefix(name, "localhost") {
		if !strings.Contains(name, "/") {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	if !strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") && !strings.Contains(name, "@") {
		name += ":latest"
	}
	return name
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// writeStatus writes the Pod's status as the kubelet's status manager does: onto the newest version of the Pod.
func (s *simulator) writeStatus(ctx context.Context, pod *corev1.Pod) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if current.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		status := pod.Status.DeepCopy()
		// Conditions other writers own (PodScheduled, DisruptionTarget) are kept.
		for _, condition := range current.Status.Conditions {
			if !hasCondition(status, condition.Type) {
				status.Conditions = append(status.Conditions, condition)
			}
		}
		current.Status = *status
		_, err = s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
}

func hasCondition(status *corev1.PodStatus, kind corev1.PodConditionType) bool {
	for _, condition := range status.Conditions {
		if condition.Type == kind {
			return true
		}
	}
	return false
}

// event records a core/v1 Event as the kubelet's recorder does (source component kubelet, the container's field path).
func (s *simulator) event(ctx context.Context, pod *corev1.Pod, fieldPath, kind, reason, message string) {
	now := metav1.Now()
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			APIVersion: "v1", ResourceVersion: pod.ResourceVersion, FieldPath: fieldPath},
		Reason: reason, Message: message, Type: kind, Count: 1,
		Source:         corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp: now, LastTimestamp: now, ReportingController: "kubelet", ReportingInstance: pod.Spec.NodeName,
	}
	if _, err := s.client.CoreV1().Events(pod.Namespace).Create(ctx, event, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
		log.Printf("kubelet-sim: event %s on %s/%s: %v", reason, pod.Namespace, pod.Name, err)
	}
}

// serveLogs answers the API server's calls for `kubectl logs` (GET /containerLogs/NS/POD/CONTAINER) with the Pod's
// test.hookguard.io/log annotation, over TLS with a certificate of its own, as the kubelet's server does.
func (s *simulator) serveLogs(port int) {
	mux := http.NewServeMux()
	mux.HandleFunc("/containerLogs/", func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/containerLogs/")
		text, ok := s.logs.Load(key)
		if !ok {
			http.Error(w, "container not found ("+key+")", http.StatusNotFound)
			return
		}
		body := text.(string)
		if tail, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && tail >= 0 {
			lines := strings.SplitAfter(body, "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			if len(lines) > tail {
				lines = lines[len(lines)-tail:]
			}
			body = strings.Join(lines, "")
		}
		if limit, err := strconv.Atoi(r.URL.Query().Get("limitBytes")); err == nil && limit >= 0 && limit < len(body) {
			body = body[:limit]
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(body))
	})
	certificate, err := selfSigned()
	if err != nil {
		log.Fatalf("kubelet-sim: certificate: %v", err)
	}
	server := &http.Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Handler: mux,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{certificate}}, ReadHeaderTimeout: 10 * time.Second}
	if err := server.ListenAndServeTLS("", ""); err != nil {
		log.Printf("kubelet-sim: kubelet API on %d: %v (kubectl logs will fail)", port, err)
		os.Exit(1)
	}
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet-sim"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
