/**
 * JupyterLab extension: renders `application/vnd.ipu-workbench.ir+json` outputs and opens saved
 * `.ir.json` files in the same view.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { IrRenderer } from './widget.js';

export const MIME_TYPE = 'application/vnd.ipu-workbench.ir+json';
const FILE_TYPE = 'ipu-workbench-ir';

const extension: IRenderMime.IExtension = {
  id: 'ipu-workbench:ir',
  rendererFactory: {
    // The views write IR strings only as text, never as HTML, so untrusted outputs are safe to show.
    safe: true,
    mimeTypes: [MIME_TYPE],
    createRenderer: options => new IrRenderer(options.mimeType)
  },
  rank: 50,
  // Files arrive as text, so a file that is not JSON is shown as an error like any other malformed document.
  dataType: 'string',
  fileTypes: [
    { name: FILE_TYPE, displayName: 'IPU Workbench IR', mimeTypes: [MIME_TYPE], extensions: ['.ir.json'], fileFormat: 'text' }
  ],
  documentWidgetFactoryOptions: {
    name: 'IPU Workbench IR viewer',
    primaryFileType: FILE_TYPE,
    fileTypes: [FILE_TYPE],
    defaultFor: [FILE_TYPE]
  }
};

export default extension;
