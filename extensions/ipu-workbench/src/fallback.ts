/**
 * A saved notebook opened again has no live widget models: ipywidgets would wait for each one, then write
 * "model not found" where the widget was and log an error in the browser console. For a widget output
 * that also carries a static picture (the workbench's IR view, a plotly figure, ...), this plugin draws
 * that picture at once instead, and hands the output to ipywidgets only once its model is known to exist
 * (a live widget of the running kernel). Nothing is logged and the notebook is not changed.
 *
 * ipywidgets gives every output one renderer, created by the factory it registers; the renderer learns
 * its widget manager through its public `manager` setter. This plugin wraps that renderer's
 * `renderModel` (on its class, so that renderers made by the factories ipywidgets registers per notebook
 * are covered too) and relies on the manager's public `restored` signal, `restoredStatus` and `has_model`.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Panel } from '@lumino/widgets';

const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const PATCHED = Symbol('ipu-wb-static-first');
const MODEL_WAIT_MS = 2000;  // as long as ipywidgets itself waits for a model to arrive

interface WidgetManager {
  readonly restoredStatus?: boolean;
  readonly restored?: { connect(slot: () => void): boolean; disconnect(slot: () => void): boolean };
  has_model(id: string): boolean;
}

/** The output's data without the widget, if it holds more than plain text. */
export function staticData(data: ReadonlyPartialJSONObject): ReadonlyPartialJSONObject | null {
  if (!(WIDGET_MIME in data)) {
    return null;
  }
  const rest = Object.fromEntries(Object.entries(data).filter(([mime]) => mime !== WIDGET_MIME));
  return Object.keys(rest).some(mime => mime !== 'text/plain') ? rest : null;
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** Whether the widget model `id` exists once `manager` has restored what the kernel holds. */
async function modelExists(manager: WidgetManager, id: string): Promise<boolean> {
  if (manager.restoredStatus === false && manager.restored) {
    await new Promise<void>(resolve => {
      const done = () => {
        manager.restored!.disconnect(done);
        resolve();
      };
      manager.restored!.connect(done);
    });
  }
  for (const start = Date.now(); Date.now() - start < MODEL_WAIT_MS; await sleep(100)) {
    if (manager.has_model(id)) {
      return true;
    }
  }
  return manager.has_model(id);
}

/** Wraps the class of ipywidgets' output renderer (made by `factory`) once. */
function patchWidgetRenderer(factory: IRenderMime.IRendererFactory, rendermime: IRenderMimeRegistry): boolean {
  const sample = factory.createRenderer({ mimeType: WIDGET_MIME, sanitizer: rendermime.sanitizer, resolver: null,
    linkHandler: null, latexTypesetter: null } as unknown as IRenderMime.IRendererOptions);
  const proto = Object.getPrototypeOf(sample);
  sample.dispose();
  const setter = Object.getOwnPropertyDescriptor(proto, 'manager')?.set;
  if (proto[PATCHED] || typeof proto.renderModel !== 'function' || setter === undefined) {
    return Boolean(proto[PATCHED]);
  }
  const managers = new WeakMap<object, WidgetManager>();
  const waiting = new WeakMap<object, (manager: WidgetManager) => void>();
  const managerOf = (renderer: object): Promise<WidgetManager> => {
    const known = managers.get(renderer);
    return known ? Promise.resolve(known) : new Promise(resolve => waiting.set(renderer, resolve));
  };
  Object.defineProperty(proto, 'manager', {
    configurable: true,
    set(this: object, manager: WidgetManager) {
      managers.set(this, manager);
      waiting.get(this)?.(manager);
      setter.call(this, manager);
    }
  });
  const render: (model: IRenderMime.IMimeModel) => Promise<void> = proto.renderModel;
  proto.renderModel = async function (this: Panel, model: IRenderMime.IMimeModel): Promise<void> {
    const data = staticData(model.data);
    const id = (model.data[WIDGET_MIME] as { model_id?: string } | undefined)?.model_id;
    const known = managers.get(this);
    if (!data || !id || (known && known.restoredStatus !== false && known.has_model(id))) {
      return render.call(this, model);
    }
    const mimeType = rendermime.preferredMimeType(data, model.trusted ? 'any' : 'ensure');
    if (!mimeType) {
      return render.call(this, model);
    }
    const picture = rendermime.createRenderer(mimeType);
    await picture.renderModel(new MimeModel({ data, metadata: model.metadata, trusted: model.trusted }));
    if (this.isDisposed) {
      picture.dispose();
      return;
    }
    this.node.textContent = '';
    this.addWidget(picture);
    if (await modelExists(await managerOf(this), id)) {
      picture.dispose();
      if (!this.isDisposed) {
        return render.call(this, model);
      }
    }
  };
  proto[PATCHED] = true;
  return true;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'ipu-workbench:widget-fallback',
  description: 'Draws the static picture of a widget output whose widget model is gone, with nothing logged.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry) => {
    const patch = (): boolean => {
      const factory = rendermime.getFactory(WIDGET_MIME);
      return factory !== undefined && patchWidgetRenderer(factory, rendermime);
    };
    if (!patch()) {  // ipywidgets registers its renderer when it activates, which may come after this plugin
      void app.started.then(patch);
    }
  }
};

export default plugin;
