"""Pictures of a compile: the graph as DOT (and SVG/PNG through Graphviz, ONNX for Netron), the memory plan as
a time × address SVG, the tasks per stream as a timeline, and the report page that holds them all."""
