/**
 * The kinds of model file the compiler reads, as the server says (`tvmExplorer/modelKinds`,
 * from its frontends): the one place the extension learns what a model file is and whether
 * Reduce Model can cut it, instead of deciding from file suffixes of its own. Asked once per
 * server; without a server nothing is refused here (the CLI then says what it cannot do).
 */
import * as path from 'path';
import type { ServerManager } from './client';
import * as ext from './lsp_ext';

export class ModelKinds {
  private asked: Promise<ext.ModelKindInfo[] | undefined> | undefined;
  private askedOf: unknown;

  constructor(private readonly server: ServerManager) {}

  /** Every kind, or undefined when the server cannot say. */
  async all(): Promise<ext.ModelKindInfo[] | undefined> {
    const client = await this.server.ready();
    if (!client) {
      return undefined;
    }
    if (!this.asked || this.askedOf !== client) {
      this.askedOf = client;
      this.asked = Promise.resolve(client.sendRequest(ext.modelKinds, {})).then(
        (got) => got.kinds,
        () => undefined,
      );
    }
    return this.asked;
  }

  /** The kind of a model file, by what the server's frontends read. */
  async of(file: string): Promise<ext.ModelKindInfo | undefined> {
    const suffix = path.extname(file).toLowerCase();
    return (await this.all())?.find((k) => k.suffix === suffix);
  }

  /** Whether Reduce Model can cut `file`; when it cannot, the sentence saying so (the kinds it
   * cuts). Without the server's answer: yes (the CLI says what it cannot do). */
  async reducible(file: string): Promise<{ ok: true } | { ok: false; why: string }> {
    const kinds = await this.all();
    const kind = kinds?.find((k) => k.suffix === path.extname(file).toLowerCase());
    if (!kinds || kind?.reducible !== false) {
      return { ok: true };
    }
    const cut = kinds.filter((k) => k.reducible).map((k) => k.suffix);
    return { ok: false, why: `Reduce Model cuts ${cut.join(' and ')} models; ${kind.suffix} is not supported yet.` };
  }
}
