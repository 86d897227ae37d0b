/**
 * The shape of a workflow: nodes and the edges between them, with the questions the loader and
 * the engine ask of it: is there a cycle (and which), in what order can nodes run, what comes
 * before or after a node, which parts are not connected.
 *
 * @example
 * const g = new WorkflowGraph(["image", "caption", "validate"], [
 *   { from: "image", to: "validate" }, { from: "caption", to: "validate" },
 * ]);
 * g.topologicalOrder(); // ["image", "caption", "validate"]
 * g.ancestors("validate"); // Set { "image", "caption" }
 */
export class WorkflowGraph {
  /** Node ids in declaration order. */
  readonly ids: readonly string[];
  #out = new Map<string, string[]>();
  #in = new Map<string, string[]>();

  constructor(ids: readonly string[], edges: ReadonlyArray<{ from: string; to: string }>) {
    this.ids = ids;
    for (const id of ids) {
      this.#out.set(id, []);
      this.#in.set(id, []);
    }
    for (const { from, to } of edges) {
      if (!this.#out.has(from) || !this.#out.has(to)) continue; // reported by the loader
      this.#out.get(from)!.push(to);
      this.#in.get(to)!.push(from);
    }
  }

  /** Direct predecessors of `id`. */
  upstream(id: string): readonly string[] {
    return this.#in.get(id) ?? [];
  }

  /** Direct successors of `id`. */
  downstream(id: string): readonly string[] {
    return this.#out.get(id) ?? [];
  }

  /** True when `id` has no edge at all. */
  isolated(id: string): boolean {
    return this.upstream(id).length === 0 && this.downstream(id).length === 0;
  }

  /**
   * A cycle, as the node ids along it with the first repeated at the end (`a → b → a`), or
   * undefined. Depth-first with colours; the first cycle in declaration order is reported.
   */
  findCycle(): string[] | undefined {
    const colour = new Map<string, "grey" | "black">();
    const stack: string[] = [];
    const visit = (id: string): string[] | undefined => {
      colour.set(id, "grey");
      stack.push(id);
      for (const next of this.downstream(id)) {
        if (colour.get(next) === "grey") return [...stack.slice(stack.indexOf(next)), next];
        if (!colour.has(next)) {
          const found = visit(next);
          if (found) return found;
        }
      }
      stack.pop();
      colour.set(id, "black");
      return undefined;
    };
    for (const id of this.ids) {
      if (colour.has(id)) continue;
      const found = visit(id);
      if (found) return found;
    }
    return undefined;
  }

  /** Kahn's order, ties in declaration order. Throws when the graph has a cycle. */
  topologicalOrder(): string[] {
    const indegree = new Map(this.ids.map((id) => [id, this.upstream(id).length]));
    const ready = this.ids.filter((id) => indegree.get(id) === 0);
    const order: string[] = [];
    while (ready.length > 0) {
      const id = ready.shift()!;
      order.push(id);
      for (const next of this.downstream(id)) {
        const left = indegree.get(next)! - 1;
        indegree.set(next, left);
        if (left === 0) ready.push(next);
      }
    }
    if (order.length !== this.ids.length) throw new Error(`cycle: ${this.findCycle()?.join(" → ")}`);
    return order;
  }

  /** Every node with a path to `id`. */
  ancestors(id: string): Set<string> {
    return this.#walk(id, (n) => this.upstream(n));
  }

  /** Every node reachable from `id`. */
  descendants(id: string): Set<string> {
    return this.#walk(id, (n) => this.downstream(n));
  }

  /** Weakly connected parts, each a list of ids in declaration order; the first holds the first node. */
  components(): string[][] {
    const seen = new Set<string>();
    const parts: string[][] = [];
    for (const start of this.ids) {
      if (seen.has(start)) continue;
      const part = this.#walk(start, (n) => [...this.upstream(n), ...this.downstream(n)]);
      part.add(start);
      for (const id of part) seen.add(id);
      parts.push(this.ids.filter((id) => part.has(id)));
    }
    return parts;
  }

  #walk(from: string, next: (id: string) => readonly string[]): Set<string> {
    const found = new Set<string>();
    const todo = [...next(from)];
    while (todo.length > 0) {
      const id = todo.pop()!;
      if (found.has(id)) continue;
      found.add(id);
      todo.push(...next(id));
    }
    return found;
  }
}
