"""webgrav from Python: gravitational N-body simulation on the GPU (WebGPU
through wgpu: Vulkan, Metal, DX12; Mesa's lavapipe without a GPU).

    import webgrav
    sim = webgrav.Simulation.from_model("plummer", n=16384, seed=1)
    sim.evolve(1.0)
    print(sim.energy_error(), sim.pos.shape)
    sim.show()   # in Jupyter: the web app's WebGPU view (or a PNG)

Units are N-body units with G = 1. The state lives on the GPU in f32 (the
Hermite integrators keep theirs in f64 on the host); the array properties
(``pos``, ``vel``, ``mass``, ``acc``, ``pot``) return new float64 arrays,
upcast copies of it, in the order the particles were given.
"""

from ._webgrav import KINDS, WebgravError, adapter_info, models, run_params
from .display import Picture
from .simulation import Simulation
from .viewer import View, view

__all__ = [
    "KINDS",
    "Picture",
    "Simulation",
    "View",
    "WebgravError",
    "adapter_info",
    "models",
    "run_params",
    "view",
]
