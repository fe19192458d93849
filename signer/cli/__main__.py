from signer.cli.app import main

main()
