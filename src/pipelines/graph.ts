/** How a failed optional step affects its dependents: they run and receive the failure, or they are skipped. */
export type OptionalMode = false | 'run' | 'skip';

/** One step of a run's frozen graph: what a deploy may not change under a started run. */
export interface GraphStep {
  readonly name: string;
  readonly needs: readonly string[];
  /** A fan-out: one item row (and job) per item of its `items`. */
  readonly map: boolean;
  readonly optional: OptionalMode;
  /** Acts outside nightshift: skipped in a dry run. */
  readonly effect: boolean;
}

/** The step graph stored with a run when it starts (`pipeline_runs.graph`). */
export interface FrozenGraph {
  readonly version: 1;
  readonly steps: readonly GraphStep[];
}

/** The steps that depend on `from`, directly or not, with `from` itself, in graph order. */
export function descendants(graph: FrozenGraph, from: string): string[] {
  const hit = new Set([from]);
  // Steps are stored in definition order, and a step can only need earlier ones: one pass suffices.
  for (const s of graph.steps) if (s.needs.some((n) => hit.has(n))) hit.add(s.name);
  return graph.steps.filter((s) => hit.has(s.name)).map((s) => s.name);
}

/** Reads a stored graph, tolerating nothing but version 1. */
export function readGraph(value: unknown): FrozenGraph {
  const g = value as FrozenGraph | null;
  if (!g || g.version !== 1 || !Array.isArray(g.steps)) throw new Error('pipeline run has a graph of an unknown version');
  return g;
}

/** The step of a graph by name. */
export function graphStep(graph: FrozenGraph, name: string): GraphStep | undefined {
  return graph.steps.find((s) => s.name === name);
}
