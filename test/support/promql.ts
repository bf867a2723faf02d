// PromQL checked with Prometheus' own grammar (@prometheus-io/lezer-promql, the parser of Prometheus' web UI).
import { parser } from '@prometheus-io/lezer-promql';

/** Where the grammar could not parse `expression` (error nodes), as `at <offset>`; empty when it parses. */
export function promqlErrors(expression: string): string[] {
  const errors: string[] = [];
  parser.parse(expression).iterate({
    enter: (node) => {
      if (node.type.isError)
        errors.push(`at ${node.from}: ${JSON.stringify(expression.slice(node.from, node.to + 5))}`);
    },
  });
  return errors;
}
