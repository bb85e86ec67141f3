"""Charts out of the page: SVG/PNG drawn on the server, the HTML cards as charts, the offline deck."""
