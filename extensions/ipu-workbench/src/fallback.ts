/**
 * A saved notebook opened again has no live widget models: ipywidgets then writes "model not found"
 * where a widget was. For such an output that also carries a static picture (the workbench's IR view,
 * a plotly figure, ...), this plugin draws that picture in place of the message. The notebook itself
 * is not changed.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const MISSING = 'Error displaying widget: model not found';
const REPLACED = 'ipu-wb-widget-fallback';

interface OutputModel {
  data: ReadonlyPartialJSONObject;
  metadata: ReadonlyPartialJSONObject;
  trusted: boolean;
}

/** The output models of every code cell in the open notebooks, with the node each is drawn in. */
function outputs(app: JupyterFrontEnd): Array<[HTMLElement, OutputModel]> {
  const found: Array<[HTMLElement, OutputModel]> = [];
  for (const panel of app.shell.widgets('main')) {
    const cells = (panel as any).content?.widgets ?? [];
    for (const cell of cells) {
      const area = cell.outputArea;
      if (!area?.model) {
        continue;
      }
      area.widgets.forEach((child: Widget, index: number) => found.push([child.node, area.model.get(index)]));
    }
  }
  return found;
}

/** The output's data without the widget, if it holds more than plain text. */
export function staticData(data: ReadonlyPartialJSONObject): ReadonlyPartialJSONObject | null {
  if (!(WIDGET_MIME in data)) {
    return null;
  }
  const rest = Object.fromEntries(Object.entries(data).filter(([mime]) => mime !== WIDGET_MIME));
  return Object.keys(rest).some(mime => mime !== 'text/plain') ? rest : null;
}

async function replaceMissing(app: JupyterFrontEnd, rendermime: IRenderMimeRegistry): Promise<void> {
  for (const [node, model] of outputs(app)) {
    const message = node.querySelector('.jupyter-widgets') ?? node;
    if (node.classList.contains(REPLACED) || message.textContent?.trim() !== MISSING) {
      continue;
    }
    const data = staticData(model.data);
    const mimeType = data && rendermime.preferredMimeType(data, model.trusted ? 'any' : 'ensure');
    if (!data || !mimeType) {
      continue;
    }
    node.classList.add(REPLACED);
    const renderer = rendermime.createRenderer(mimeType);
    await renderer.renderModel(new MimeModel({ data, metadata: model.metadata, trusted: model.trusted }));
    message.textContent = '';
    message.classList.remove('jupyter-widgets');
    Widget.attach(renderer, message as HTMLElement);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'ipu-workbench:widget-fallback',
  description: 'Draws the static picture of a widget output whose widget model is gone.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry) => {
    let pending = false;
    const observer = new MutationObserver(() => {
      if (!pending) {
        pending = true;
        requestAnimationFrame(() => {
          pending = false;
          void replaceMissing(app, rendermime);
        });
      }
    });
    app.restored.then(() => observer.observe(app.shell.node, { childList: true, subtree: true, characterData: true }));
  }
};

export default plugin;
