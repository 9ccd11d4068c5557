/** The MIME renderer: a Lumino widget that draws the IR document of its model (or why it cannot). */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { clear } from './dom.js';
import { renderIr } from './view.js';

export class IrRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly mimeType: string) {
    super();
    this.addClass('ipu-wb-renderer');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    clear(this.node);
    renderIr(this.node, model.data[this.mimeType], model.metadata?.[this.mimeType]);
    return Promise.resolve();
  }
}
