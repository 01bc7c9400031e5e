/**
 * A registry of live long-lived resources (pools, workers, timers, listeners) that nightshift
 * created. Tests use it to fail when something is left running; `liveResources()` is exported
 * from `nightshift/testing`.
 */
const live = new Map<number, { id: number; kind: string; label: string }>();
let next = 1;

/** Records a resource as live; call the returned function when it is closed. Safe to call twice. */
export function trackResource(kind: string, label: string): () => void {
  const id = next++;
  live.set(id, { id, kind, label });
  return () => {
    live.delete(id);
  };
}

/** The resources created by nightshift that are still live. */
export function liveResources(): { id: number; kind: string; label: string }[] {
  return [...live.values()];
}
