"""nbval runs the tutorials in kernels started from this process. Pinning plotly's renderer makes every
figure a plotly JSON bundle (which JupyterLab draws without a kernel), as in the saved notebooks, even
where plotly would pick another renderer by itself (inside VS Code, Colab or Kaggle)."""
import os

os.environ["PLOTLY_RENDERER"] = "plotly_mimetype"
