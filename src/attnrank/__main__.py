from attnrank.cli import main

raise SystemExit(main())
