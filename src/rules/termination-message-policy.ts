import { GUARD_CONTAINER_NAME } from '../core/annotations.js';
import { containersOf, podSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

const FALLBACK = 'FallbackToLogsOnError';

/**
 * Sets `terminationMessagePolicy: FallbackToLogsOnError` on each hook container that kept the default (`File`: at
 * admission the API server has defaulted it, so an explicit `File` reads the same), so a container that fails without writing a termination message still says why in its
 * status: the kubelet then puts the last 80 lines, at most 2 KiB, of its log into `state.terminated.message`
 * (kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go convertToKubeContainerStatus, getTerminationMessage,
 * readLastStringFromContainerLogs; the limits MaxContainerTerminationMessageLogLines/LogLength in
 * pkg/kubelet/container/runtime.go, v1.34). Only when the container exits non-zero and its message file is empty:
 * nothing else about the run changes (same command, same exit code, same log; a container that writes its message
 * file keeps it). `hookguard why` and the hook watcher's Events read that message. hookguard's own guard init
 * container is left alone. A container that chose `FallbackToLogsOnError` already, or a value hookguard does not
 * know, is left as it is. Off: `rules.terminationMessagePolicy.enabled: false`, or
 * `hookguard.io/skip: termination-message-policy` on one hook.
 */
export const terminationMessagePolicy: MutationRule = {
  id: 'termination-message-policy',
  doc: 'Sets terminationMessagePolicy FallbackToLogsOnError on hook containers left at File, so a failed container keeps its last log lines in its status.',
  stages: ['admission'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  mutate(object) {
    const podSpec = podSpecOf(object);
    if (!podSpec) return report();
    const changed: string[] = [];
    for (const container of containersOf(podSpec)) {
      const policy = container.terminationMessagePolicy;
      if (container.name === GUARD_CONTAINER_NAME || (policy !== undefined && policy !== 'File')) continue;
      container.terminationMessagePolicy = FALLBACK;
      changed.push(String(container.name));
    }
    if (changed.length === 0) return report();
    return report({
      mutations: [
        `set terminationMessagePolicy ${FALLBACK} on ${changed.join(', ')}: a failed container keeps its last log lines in its status`,
      ],
    });
  },
};
