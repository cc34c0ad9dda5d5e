from hermes_pipeline.cli import main

main()
