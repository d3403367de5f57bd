"""Operations that cross the runners: what a face asks for in one call (a home's status, the
dream followed by its reconcile). The only floor allowed to import more than one runner.
"""
